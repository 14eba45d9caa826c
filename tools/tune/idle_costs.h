// SPDX-License-Identifier: Apache-2.0
// tools/tune/idle_costs.h: what cudapool tune takes idle release to cost in time, and the rule it
// recommends an idle delay by: the one place of these numbers (idle.h uses them, docs/tune.md
// "Held over time" states them). Not a measurement itself, and not the idle policy
// (pool/device_pool_idle.cpp).
#pragma once

#include <cstdint>

namespace cudapool::tune {

// The time memory given back costs the program when it needs it again, as measured on the H200
// (docs/benchmarks.md, "Idle release"). Alone (bench/vmm_costs.cpp,
// docs/results/vmm-costs-2026-12-04-h200.md) mapping is paid per page, about 45 us a page
// whatever its size from 2 MiB to 256 MiB (cuMemCreate ~15 us, cuMemSetAccess ~30 us a mapping),
// plus 0.1-0.3 ms per GB; the driver's give-back calls on another thread slow the program by 2%
// at most (bench/vmm_interference.cpp). In the real SAM loop, session 15 (1 GiB pages, 751 GB
// mapped again in a run): the run took 0.48 s longer than without idle release, 0.6 ms per GB
// with the per-page part taken out; the per-byte figure is that one. The per-page part is an upper
// bound: with 20 MiB pages (237 GB again, session 14) mapping partly overlapped the device's
// work.
inline constexpr double kRemapSecondsPerByte = 0.6e-3 / 1e9;  // 0.6 ms per GB
inline constexpr double kRemapSecondsPerMapping = 45e-6;      // 45 us per page or segment

// An idle variant is recommended only when its estimated cost is at most this share of the log's
// span (2%: below the 0.98x speed target of DESIGN.md section 7) ...
inline constexpr double kIdleCostBudget = 0.02;
// ... and it holds at least this much less on average than the same setting without idle release.
inline constexpr double kIdleMinSaving = 0.05;
// ... and its peak reserved is at most this much above that setting's (memory given back and
// taken again may land elsewhere: a handle still partly in use stays, and the next request may
// map above it).
inline constexpr double kIdlePeakTolerance = 0.01;

// The estimated seconds of mapping `bytes` again in `mappings` pages or segments (negative
// counts: none).
inline double remap_seconds(double bytes, double mappings) {
  return (bytes > 0 ? bytes : 0.0) * kRemapSecondsPerByte +
         (mappings > 0 ? mappings : 0.0) * kRemapSecondsPerMapping;
}

}  // namespace cudapool::tune
