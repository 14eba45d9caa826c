// SPDX-License-Identifier: Apache-2.0
// tools/analyze/figure.h: the engine's exact integer for sums of a log's figures. A log's sizes
// are below 2^64, but their sums are not bounded by it, nor kept non-negative, in a log whose
// events are inconsistent (a segment_free of a segment never made, blocks past the address
// space): the report names such a sum "impossible" with its exact value, as the Python report
// did with its unbounded integers. 128 bits hold the sum of 2^64 figures of 2^64 - 1. Plain
// arithmetic helpers and their decimal text; no I/O. Not here: JSON (json_out.h).
#pragma once

#include <cstdint>
#include <string>

namespace cudapool::analyze {

__extension__ typedef __int128 Figure;
__extension__ typedef unsigned __int128 UFigure;

inline constexpr Figure kUint64Limit = Figure{1} << 64;

// Whether a figure is one a 64-bit device can have: 0 to 2^64 - 1.
inline bool possible(Figure v) {
  return v >= 0 && v < kUint64Limit;
}

// Its decimal text ("-12", "18446744073709551616").
std::string figure_text(Figure v);

// v as a double, rounded to nearest (Python's float(int)).
double to_double(Figure v);

// Seconds between two CLOCK_MONOTONIC readings (t - t0) / 1e9, as Python computes it.
double seconds_between(std::uint64_t t, std::uint64_t t0);

// "0x7f3a40000000": an address as the log writes it.
std::string hex_text(std::uint64_t v);
std::string hex_text(UFigure v);

}  // namespace cudapool::analyze
