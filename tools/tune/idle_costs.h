// SPDX-License-Identifier: Apache-2.0
// tools/tune/idle_costs.h: what cudapool tune takes idle release to cost in time, and the rule it
// recommends an idle delay by: the one place of these numbers (idle.h uses them, docs/tune.md
// "Held over time" states them). Not a measurement itself, and not the idle policy
// (pool/device_pool_idle.cpp).
#pragma once

#include <cstdint>

namespace cudapool::tune {

// The time memory given back costs when the program needs it again, as measured on the H200
// (bench/vmm_costs.cpp; docs/results/vmm-costs-2026-12-04-h200.md; docs/benchmarks.md, "Idle
// release"): mapping is paid per page, about 45 us a page whatever its size from 2 MiB to 256 MiB
// (cuMemCreate ~15 us, cuMemSetAccess ~30 us a mapping), plus about 0.1 ms per GB; a segment's
// cudaMalloc about the same per call and 0.07-0.2 ms per GB. The estimate is an upper bound on
// that GPU: in the SAM loop of benchmarks.md part of the mapping overlapped the device's work
// (0.23 s measured against 0.53 s estimated for 237 GB mapped again in 20 MiB pages).
inline constexpr double kRemapSecondsPerByte = 0.1e-3 / 1e9;  // 0.1 ms per GB
inline constexpr double kRemapSecondsPerMapping = 45e-6;      // 45 us per page or segment

// An idle variant is recommended only when its estimated cost is at most this share of the log's
// span (2%: below the 0.98x speed target of DESIGN.md section 7) ...
inline constexpr double kIdleCostBudget = 0.02;
// ... and it holds at least this much less on average than the same setting without idle release.
inline constexpr double kIdleMinSaving = 0.05;
// ... and its peak reserved is at most this much above that setting's (a larger page, tried
// with idle release under expandable segments, may round a segment's growth up by up to a page).
inline constexpr double kIdlePeakTolerance = 0.01;

// The estimated seconds of mapping `bytes` again in `mappings` pages or segments (negative
// counts: none).
inline double remap_seconds(double bytes, double mappings) {
  return (bytes > 0 ? bytes : 0.0) * kRemapSecondsPerByte +
         (mappings > 0 ? mappings : 0.0) * kRemapSecondsPerMapping;
}

}  // namespace cudapool::tune
