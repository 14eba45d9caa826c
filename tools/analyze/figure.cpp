// SPDX-License-Identifier: Apache-2.0
// tools/analyze/figure.cpp: see figure.h.
#include "tools/analyze/figure.h"

#include <algorithm>

namespace cudapool::analyze {

std::string figure_text(Figure v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  UFigure u = negative ? UFigure(0) - static_cast<UFigure>(v) : static_cast<UFigure>(v);
  std::string out;
  while (u != 0) {
    out += static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  }
  if (negative) out += '-';
  std::reverse(out.begin(), out.end());
  return out;
}

double to_double(Figure v) {
  // Exact below 2^53; above it the conversion rounds to nearest, as Python's does.
  return static_cast<double>(v);
}

double seconds_between(std::uint64_t t, std::uint64_t t0) {
  return to_double(static_cast<Figure>(t) - static_cast<Figure>(t0)) / 1e9;
}

std::string hex_text(UFigure v) {
  if (v == 0) return "0x0";
  std::string out;
  while (v != 0) {
    out += "0123456789abcdef"[static_cast<int>(v & 15)];
    v >>= 4;
  }
  out += "x0";
  std::reverse(out.begin(), out.end());
  return out;
}

std::string hex_text(std::uint64_t v) {
  return hex_text(static_cast<UFigure>(v));
}

}  // namespace cudapool::analyze
