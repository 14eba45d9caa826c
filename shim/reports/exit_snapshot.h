// SPDX-License-Identifier: Apache-2.0
// shim/reports/exit_snapshot.h: what the pools hold when the process exits, read once for every
// report made then (exit_report.h: the CUDAPOOL_SUMMARY table, its leak report and the log's
// summary line all read the same snapshot). Per live pool: its device, its statistics, its reuse
// fences' counters and the blocks still allocated, with their return addresses when
// CUDAPOOL_BACKTRACE recorded them. Each pool is read under its lock; no CUDA call, no symbol
// lookup. Not here: what is made of it (exit_report.cpp), the frames' symbol names
// (recording/event_log.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "log/format.h"
#include "pool/stats.h"

namespace cudapool::shim {

struct PoolAtExit {
  int device = 0;
  pool::DeviceStats stats;
  std::vector<std::pair<const char*, std::uint64_t>> fence_counters;  // ReuseFence::counters()
  // The blocks still allocated, in the pool's block order: dev, sizes, the alloc event's seq, time
  // and thread, and the frames when recorded (symbols left empty).
  std::vector<log::Leak> leaks;
};

// The live pools, in the registry's order (several may share a device: one per context).
std::vector<PoolAtExit> exit_snapshot();

}  // namespace cudapool::shim
