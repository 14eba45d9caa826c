// SPDX-License-Identifier: Apache-2.0
// shim/pools/pool_lock.cpp: see pool_lock.h.
#include "shim/pools/pool_lock.h"

#include <cstdint>

namespace cudapool::shim {

namespace {

// thread_cache:auto: caches go on when at least kContendedToEnable of kWindow lock acquisitions
// found the lock held.
constexpr std::uint32_t kWindow = 1024;
constexpr std::uint32_t kContendedToEnable = kWindow / 8;

}  // namespace

void PoolLock::count_acquisition(bool contended) {
  ContextPool& p = pool_;
  ++p.window_acquisitions;
  p.window_contended += contended ? 1 : 0;
  if (p.window_acquisitions < kWindow) return;
  if (p.window_contended >= kContendedToEnable) {
    p.thread_caching.store(true, std::memory_order_relaxed);
    p.caching_on_contention = false;
  }
  p.window_acquisitions = 0;
  p.window_contended = 0;
}

}  // namespace cudapool::shim
