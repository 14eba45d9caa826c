// SPDX-License-Identifier: Apache-2.0
// shim/reports/exit_snapshot.cpp: see exit_snapshot.h.
#include "shim/reports/exit_snapshot.h"

#include <mutex>

#include "shim/pools/context_registry.h"

namespace cudapool::shim {

std::vector<PoolAtExit> exit_snapshot() {
  std::vector<PoolAtExit> pools;
  for_each_pool([&](ContextPool& p) {
    PoolAtExit& out = pools.emplace_back();
    out.device = p.device;
    std::lock_guard<SpinLock> lock(p.mutex);
    out.stats = p.pool.stats();
    out.fence_counters = p.backend.fence().counters();
    p.pool.for_each_block([&](const pool::Block& b) {
      if (!b.allocated) return;
      const auto frames = p.backtraces.find(b.ptr);
      out.leaks.push_back(log::Leak{
          .dev = p.device,
          .ptr = b.ptr,
          .size = b.requested_size,
          .block_size = b.size,
          .seq = b.alloc_seq,
          .t_ns = b.alloc_t_ns,
          .tid = b.alloc_tid,
          .frames = frames != p.backtraces.end() ? frames->second : std::vector<std::uint64_t>{},
          .symbols = {},  // named by the log (recording/event_log.h, finish_log)
      });
    });
    return false;
  });
  return pools;
}

}  // namespace cudapool::shim
