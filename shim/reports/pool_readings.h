// SPDX-License-Identifier: Apache-2.0
// shim/reports/pool_readings.h: the running process's pools as the control endpoint and the
// metrics file report them. Per device: its pools' statistics summed (as the log's summary line
// sums a device's contexts), what is behind reuse fences, idle in the cache and kept in threads'
// caches right now, the largest free cached block, the reuse fences' counters; and, for a
// memory_viz snapshot (the control endpoint's, the OOM snapshot's), every block of every pool. Each
// pool is copied under its lock and nothing else is done there: no formatting, no I/O, no driver
// call. Not here: the formats (control/control_commands.h, control_snapshot.h,
// control/prometheus_text.h), the state at exit (reports/exit_snapshot.h), changing anything
// (empty-cache: control/control_commands.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "pool/stats.h"

namespace cudapool::shim {

struct DeviceReading {
  int device = 0;
  int contexts = 0;  // pools of the device (one per CUDA context)
  pool::DeviceStats stats;
  std::uint64_t fenced_blocks = 0;  // freed, still behind a reuse fence
  std::uint64_t fenced_bytes = 0;
  std::uint64_t idle_cached_bytes = 0;    // free cached blocks (what empty-cache may release)
  std::uint64_t largest_free_block = 0;   // the largest of them
  std::uint64_t thread_cached_bytes = 0;  // freed blocks kept in threads' caches
  std::vector<std::pair<const char*, std::uint64_t>> fence_counters;  // summed over its pools
};

// The devices that have pools, in device order.
std::vector<DeviceReading> read_devices();

enum class BlockState : std::uint8_t { kAllocated, kFenced, kFree, kUnmapped };

struct BlockReading {
  std::uint64_t ptr = 0, size = 0, requested = 0, segment = 0, stream = 0;
  BlockState state = BlockState::kFree;
  bool small = false;          // a small-pool block
  bool expandable = false;     // in an expandable segment
  bool thread_cached = false;  // allocated to the pool, freed by the program into a thread's cache
  // With read_blocks(true), of an allocated or fenced block: who asked for it (CUDAPOOL_BACKTRACE),
  // its return addresses and its Python stack's id (recording/event_log.h's python_stack_table();
  // 0: none).
  std::uint32_t python_stack = 0;
  std::vector<std::uint64_t> frames;
};

struct PoolBlocks {
  int device = 0;
  int ctx = 0;  // the context's number among the device's pools (the log's ctx)
  std::vector<BlockReading> blocks;  // every block of every segment
};

// Every live pool's blocks, in the registry's order; with_frames: each block's frames too.
std::vector<PoolBlocks> read_blocks(bool with_frames = false);

}  // namespace cudapool::shim
