// SPDX-License-Identifier: Apache-2.0
// log/read/compression.h: the compressed formats a log may come in (log/compressions.def; their
// enum, log::Compression: log/compression_kind.h) and how a reader recognises one by the first
// bytes of its input (sniff), whatever the file's name. Not here: decoding (decoder.h), opening
// an input (input.h).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "log/compression_kind.h"

namespace cudapool::log {

struct CompressionFormat {
  Compression id;
  std::string_view name;          // "gzip"
  std::string_view magic;         // its first bytes
  std::string_view decompressor;  // the command that writes it decompressed: "zcat"
  bool read;                      // decoded by the readers (else refused)
};

// Every format of compressions.def, in its order.
std::span<const CompressionFormat> compressions();

// The longest magic: a reader looks at this many first bytes (fewer when the input is shorter).
inline constexpr std::size_t kSniffBytes = 6;

// The format whose magic the input's first bytes start with, or nullptr (plain text). Bytes
// shorter than a magic do not match it.
const CompressionFormat* sniff(std::string_view first);

}  // namespace cudapool::log
