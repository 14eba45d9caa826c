// SPDX-License-Identifier: Apache-2.0
// shim/reports/pool_readings.cpp: see pool_readings.h.
#include "shim/reports/pool_readings.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "shim/pools/context_registry.h"
#include "shim/pools/thread_cache.h"

namespace cudapool::shim {

namespace {

// What one pool adds to its device's reading; under the pool's lock.
void add_pool(ContextPool& p, DeviceReading& d) {
  std::lock_guard<SpinLock> lock(p.mutex);
  if (d.contexts == 0) {
    d.stats = p.pool.stats();
    d.fence_counters = p.backend.fence().counters();
  } else {
    pool::add_pool_stats(d.stats, p.pool.stats());
    const auto counters = p.backend.fence().counters();
    for (std::size_t k = 0; k < counters.size() && k < d.fence_counters.size(); ++k) {
      d.fence_counters[k].second += counters[k].second;
    }
  }
  ++d.contexts;
  d.fenced_blocks += p.pool.pending_fences();
  d.fenced_bytes += p.pool.pending_fence_bytes();
  d.idle_cached_bytes += p.pool.idle_cached_bytes();
  if (!p.thread_caches.empty()) d.thread_cached_bytes += thread_cached_bytes(p);
  p.pool.for_each_block([&](const pool::Block& b) {
    if (!b.allocated && b.fence == 0 && b.mapped && b.size > d.largest_free_block) {
      d.largest_free_block = b.size;
    }
  });
}

}  // namespace

std::vector<DeviceReading> read_devices() {
  std::vector<DeviceReading> devices;
  for_each_pool([&](ContextPool& p) {
    auto it = std::find_if(devices.begin(), devices.end(),
                           [&](const DeviceReading& d) { return d.device == p.device; });
    if (it == devices.end()) {
      devices.emplace_back();
      it = devices.end() - 1;
      it->device = p.device;
    }
    add_pool(p, *it);
    return false;
  });
  std::sort(devices.begin(), devices.end(),
            [](const DeviceReading& a, const DeviceReading& b) { return a.device < b.device; });
  return devices;
}

std::vector<PoolBlocks> read_blocks(bool with_frames) {
  std::vector<PoolBlocks> pools;
  for_each_pool([&](ContextPool& p) {
    PoolBlocks& out = pools.emplace_back();
    out.device = p.device;
    out.ctx = p.ctx;
    std::lock_guard<SpinLock> lock(p.mutex);
    const bool caches = !p.thread_caches.empty();
    p.pool.for_each_block([&](const pool::Block& b) {
      BlockReading r;
      r.ptr = b.ptr;
      r.size = b.size;
      r.requested = b.allocated || b.fence != 0 ? b.requested_size : 0;
      r.segment = b.segment;
      r.stream = b.stream;
      r.state = b.allocated    ? BlockState::kAllocated
                : b.fence != 0 ? BlockState::kFenced
                : b.mapped     ? BlockState::kFree
                               : BlockState::kUnmapped;
      r.small = b.pool != nullptr && b.pool->is_small;
      r.expandable = b.expandable != nullptr;
      r.thread_cached = caches && b.allocated && thread_cache_holds_freed(b);
      if (with_frames && (b.allocated || b.fence != 0)) {
        r.python_stack = b.alloc_stack;
        if (const auto f = p.backtraces.find(b.ptr); f != p.backtraces.end()) r.frames = f->second;
      }
      out.blocks.push_back(std::move(r));
    });
    return false;
  });
  return pools;
}

}  // namespace cudapool::shim
