// tools/replay/bytes_arg.h: a byte count as the command-line tools take it: digits with an
// optional binary suffix K, M, G, T (or KiB, MiB, GiB, TiB). Header-only; shared by
// cudapool-replay and cudapool-tune.
#pragma once

#include <cstdint>
#include <string>

namespace cudapool::replay {

// false for anything else: empty, negative, a bad suffix, or a value that overflows 64 bits.
inline bool parse_bytes(const std::string& text, std::uint64_t& out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used, 10);
  } catch (...) {
    return false;
  }
  const std::string suffix = text.substr(used);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "KiB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MiB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GiB") {
    shift = 30;
  } else if (suffix == "T" || suffix == "TiB") {
    shift = 40;
  } else if (!suffix.empty()) {
    return false;
  }
  if (shift != 0 && value > (~0ull >> shift)) return false;
  out = value << shift;
  return true;
}

}  // namespace cudapool::replay
