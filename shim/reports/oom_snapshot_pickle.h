// SPDX-License-Identifier: Apache-2.0
// shim/reports/oom_snapshot_pickle.h: the memory_viz snapshot of the pools at an out-of-memory
// (CUDAPOOL_OOM_SNAPSHOT, oom_snapshot.h), as the bytes of a pickle (log/pickle_out.h) with the
// schema of PyTorch 2.11's torch.cuda.memory._snapshot() that `cudapool export --memory-viz`
// writes (docs/exports.md, scripts/cudapool_analysis/memviz_snapshot.py):
// {"segments", "device_traces", "allocator_settings", "external_annotations"}. Segments in device
// and address order (an expandable segment: one per run of mapped pages), each with its blocks in
// address order covering it exactly (allocated: active_allocated; behind a reuse fence:
// active_pending_free; free ranges: inactive); each block's frames from its return addresses
// (named with dladdr: "SYMBOL+0xOFF" in its file, else "lib.so+0xOFF", else "0xADDR" in "??") and
// its Python stack (CUDAPOOL_BACKTRACE=python), combined as PyTorch combines them. device_traces:
// one list per device ordinal, empty but for the failed request's device, which holds one "oom"
// entry (size, stream, device_free, time_us, the request's frames): the shim keeps no history.
// Made from copies taken under the pools' locks (pool_readings.h); no lock is held here. Not here:
// when and where it is written (oom_snapshot.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/describe.h"
#include "log/stack_table.h"
#include "shim/reports/pool_readings.h"

namespace cudapool::shim {

// The request the pool answered with out-of-memory.
struct OomRequest {
  int device = 0;
  std::uint64_t size = 0;  // bytes asked for
  std::uint64_t stream = 0;
  std::uint64_t device_free = 0;  // as the driver said (0 when it could not be asked)
  std::uint64_t time_us = 0;      // wall clock
  std::vector<std::uint64_t> frames;
  std::uint32_t python_stack = 0;
};

// At most this many frames are written in all (about 100 bytes each); the blocks after that have
// none, and *frames_left_out counts the frames left out.
inline constexpr std::size_t kMaxSnapshotFrames = std::size_t{1} << 20;

// stacks: the table the Python stack ids name (nullptr: none).
std::string oom_snapshot_pickle(const std::vector<PoolBlocks>& pools, const OomRequest& request,
                                const std::vector<config::EffectiveSetting>& settings,
                                const log::StackTable* stacks, std::size_t* frames_left_out);

}  // namespace cudapool::shim
