// SPDX-License-Identifier: Apache-2.0
// log/read/compression.cpp: see compression.h.
#include "log/read/compression.h"

namespace cudapool::log {

namespace {

// sizeof - 1: a magic may hold a NUL byte (xz's).
constexpr CompressionFormat kFormats[] = {
#define CUDAPOOL_COMPRESSION(id, name, magic, decompressor, read) \
  {Compression::id, name, std::string_view(magic, sizeof(magic) - 1), decompressor, read},
#include "log/compressions.def"
#undef CUDAPOOL_COMPRESSION
};

constexpr bool magics_fit() {
  for (const CompressionFormat& f : kFormats) {
    if (f.magic.empty() || f.magic.size() > kSniffBytes) return false;
  }
  return true;
}
static_assert(magics_fit(), "every magic has 1 to kSniffBytes bytes");

}  // namespace

std::span<const CompressionFormat> compressions() {
  return kFormats;
}

const CompressionFormat* sniff(std::string_view first) {
  for (const CompressionFormat& f : kFormats) {
    if (first.substr(0, f.magic.size()) == f.magic) return &f;
  }
  return nullptr;
}

}  // namespace cudapool::log
