// SPDX-License-Identifier: Apache-2.0
// tools/replay/bytes_arg.h: a byte count as the command-line tools take it (--device-memory of
// cudapool replay and cudapool tune). The rule, for --help and for the message that refuses a
// size: kSizeForms. Header-only. Not here: each tool's own bounds (the smallest and largest device
// it simulates).
#pragma once

#include <cctype>
#include <cstdint>
#include <string>

namespace cudapool::replay {

// What parse_bytes takes, said where a size is refused and in --help.
constexpr const char* kSizeForms =
    "bytes (80000000000), or a number with a unit K, M, G or T, any case, with or without B or "
    "iB (512M, 80G, 2GB, 2gib, 1.5T): binary units, G = GiB = 2^30 bytes, as PyTorch and "
    "nvidia-smi count";

// false for anything else: empty, negative, a bad unit, a fraction without a unit, more than 9
// decimals, or a value that overflows 64 bits. A fraction of a unit is rounded down to a byte.
inline bool parse_bytes(const std::string& text, std::uint64_t& out) {
  std::size_t i = 0;
  std::uint64_t whole = 0;
  const auto digit = [&](std::size_t at) {
    return at < text.size() && text[at] >= '0' && text[at] <= '9';
  };
  if (!digit(0)) return false;
  for (; digit(i); ++i) {
    const unsigned d = static_cast<unsigned>(text[i] - '0');
    if (whole > (~0ull - d) / 10) return false;
    whole = whole * 10 + d;
  }
  std::uint64_t fraction = 0, scale = 1;  // fraction / scale: the decimals, below 1
  if (i < text.size() && text[i] == '.') {
    if (!digit(++i)) return false;
    for (; digit(i); ++i) {
      if (scale == 1000000000ull) return false;
      fraction = fraction * 10 + static_cast<unsigned>(text[i] - '0');
      scale *= 10;
    }
  }
  std::string unit;
  for (; i < text.size(); ++i) {
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  unsigned shift = 0;
  if (unit.empty() || unit == "b") {
    if (scale != 1) return false;  // a fraction of a byte
  } else {
    const std::string rest = unit.substr(1);
    if (rest != "" && rest != "b" && rest != "ib") return false;
    switch (unit[0]) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      default:
        return false;
    }
  }
  if (whole > (~0ull >> shift)) return false;
  // (fraction << shift) / scale, in two parts that stay within 64 bits (scale <= 10^9).
  const std::uint64_t unit_bytes = 1ull << shift;
  const std::uint64_t part =
      unit_bytes / scale * fraction + (unit_bytes % scale) * fraction / scale;
  const std::uint64_t value = whole << shift;
  if (value > ~0ull - part) return false;
  out = value + part;
  return true;
}

}  // namespace cudapool::replay
