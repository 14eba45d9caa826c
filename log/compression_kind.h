// SPDX-License-Identifier: Apache-2.0
// log/compression_kind.h: log::Compression, the compressed formats a log may come in, made from the
// one list of them (log/compressions.def): kNone (plain text), then each format of the list. The
// writer (log/compression.h) writes two of them, zstd and gzip; the readers (log/read/
// compression.h) recognise them all. Not here: the names, magic bytes and decompressors
// (compressions.def through log/read/compression.h), writing (compression.h), reading (log/read/).
#pragma once

#include <cstdint>

namespace cudapool::log {

enum class Compression : std::uint8_t {
  kNone,  // plain text
#define CUDAPOOL_COMPRESSION(id, name, magic, decompressor, read) id,
#include "log/compressions.def"  // NOLINT: an X-macro list, included where it is used
#undef CUDAPOOL_COMPRESSION
};

}  // namespace cudapool::log
