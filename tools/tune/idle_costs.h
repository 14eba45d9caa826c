// SPDX-License-Identifier: Apache-2.0
// tools/tune/idle_costs.h: what cudapool tune takes idle release to cost in time, and the rule it
// recommends an idle delay by: the one place of these numbers (idle.h uses them, docs/tune.md
// "Held over time" states them). Not a measurement itself, and not the idle policy
// (pool/device_pool_idle.cpp).
#pragma once

#include <cstdint>

namespace cudapool::tune {

// The time memory given back costs when the program needs it again: per byte mapped again
// (cuMemCreate/cuMemMap, or a segment's cudaMalloc) and per device call. Provisional values, to be
// replaced by the figures measured on the H200 (docs/benchmarks.md, "Idle release": there, the
// heavy images of the SAM loop mapped their pages again for about 0.8 s over 12 images); keep them
// named here so that one edit changes every use.
inline constexpr double kRemapSecondsPerByte = 0.7e-3 / 1e9;  // 0.7 ms per GB
inline constexpr double kRemapSecondsPerCall = 20e-6;         // 20 us per segment or mapping

// An idle variant is recommended only when its estimated cost is at most this share of the log's
// span (2%: below the 0.98x speed target of DESIGN.md section 7) ...
inline constexpr double kIdleCostBudget = 0.02;
// ... and it holds at least this much less on average than the same setting without idle release.
inline constexpr double kIdleMinSaving = 0.05;

// The estimated seconds of mapping `bytes` again in `calls` device calls (negative counts: none).
inline double remap_seconds(double bytes, double calls) {
  return (bytes > 0 ? bytes : 0.0) * kRemapSecondsPerByte +
         (calls > 0 ? calls : 0.0) * kRemapSecondsPerCall;
}

}  // namespace cudapool::tune
