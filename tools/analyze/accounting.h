// SPDX-License-Identifier: Apache-2.0
// tools/analyze/accounting.h: what a device's events imply (docs/log-format.md, "What the events
// imply"), the port of tests/oracle/accounting.py's Device: torch.cuda.memory_stats()
// style counters (pool "all", exact: figure.h), the allocated and reserved peaks with their lines,
// the blocks alive (allocated: alloc .. free_requested; active: alloc .. free_completed) with what
// the leaks need of them, the contexts' shares, and the problems of the events' sequence (a free
// of a block not allocated, ...). Memory: the blocks alive. Not here: the segments' layout
// (layout.h), the log-wide tallies (analysis.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tools/analyze/figure.h"
#include "tools/analyze/log_line.h"
#include "tools/analyze/slab_map.h"

namespace cudapool::analyze {

// [current, peak, allocated, freed], as a pool's Stat.
struct Counter {
  Figure current = 0, peak = 0, allocated = 0, freed = 0;
  // up: current and allocated grow, the peak follows; true when the peak rose.
  bool up(Figure n) {
    current += n;
    allocated += n;
    if (current > peak) {
      peak = current;
      return true;
    }
    return false;
  }
  void down(Figure n) {
    current -= n;
    freed += n;
  }
};

struct Peak {
  Figure bytes = 0;
  std::uint64_t seq = 0, t_ns = 0, line = 0;
  Figure allocated = 0;  // the reserved peak: allocated bytes then
  Figure active = 0;     // and active bytes (allocated + fenced: docs/report.md)
  // The reserved peak: the event that set it (a segment_alloc or segment_map: its ptr and size)
  // and the request that came next on the device (the first alloc after it), when one came.
  std::uint64_t set_ptr = 0, set_size = 0;
  bool set_by_map = false;
  struct Request {
    std::uint64_t size = 0, block_size = 0, seq = 0;
  };
  std::optional<Request> request;
};

// A block alive in the accounting's sense: allocated (live) or active, from its alloc event.
struct LiveBlock {
  std::uint64_t size = 0, block_size = 0, seq = 0, t_ns = 0, tid = 0;
  std::uint64_t line = 0;       // of its alloc: the order of the Python reader's dict
  std::uint32_t backtrace = 0;  // BacktraceTable id, 0: none (or not a list)
  std::uint8_t ctx = 0;         // the context of its alloc
  bool live = false, active = false;
};

class BacktraceTable;

struct DeviceState {
  explicit DeviceState(int id) : dev(id) {}
  int dev;
  std::uint64_t events = 0;
  SlabMap<LiveBlock> blocks;
  std::uint64_t live_count = 0;
  Counter allocation, allocated_bytes, active_n, active_bytes, requested_bytes,
      requested_until_free, reserved_bytes, segment;
  std::uint64_t num_ooms = 0, num_device_alloc = 0, num_device_free = 0;
  std::uint64_t free_requested = 0, free_completed = 0;
  std::optional<Peak> peak_allocated, peak_reserved;
  bool peak_request_pending = false;  // the reserved peak's request has not come yet
  std::uint64_t contexts_dropped = 0, dropped_blocks = 0, last_drop_seq = 0;
  Figure dropped_bytes = 0;
  std::set<int> contexts{0};
  std::map<int, Figure> reserved_ctx, segments_ctx;

  // The log frees blocks but has no free_completed events (another writer's): blocks then leave
  // the cache, and stop being active, at free_requested.
  bool no_free_completed() const { return free_completed == 0 && free_requested > 0; }
};

using LineProblem = std::function<void(std::uint64_t line, std::string what)>;

// Which counters an event moved (for the timeline and the peaks' copies).
struct Accounted {
  bool new_allocated_peak = false;
  bool new_reserved_peak = false;
};

// Applies one event of the device's (the accounting.py first pass's loop body for it).
// backtrace: the table the alloc's backtrace is interned in (its id given in bt_id, 0 for
// none); released when the block stops being allocated.
Accounted account(DeviceState& d, const Event& e, std::uint64_t line, std::uint32_t bt_id,
                  BacktraceTable& backtraces, const LineProblem& problem);

}  // namespace cudapool::analyze
