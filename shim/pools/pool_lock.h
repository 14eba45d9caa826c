// SPDX-License-Identifier: Apache-2.0
// shim/pools/pool_lock.h: the lock the pooled paths take around a context's pool (its spin lock,
// ContextPool::mutex), counting for thread_cache:auto how often it was found held: once at least
// 1/8 of 1024 acquisitions were contended, the pool's thread caches go on (thread_cache.h) and the
// counting stops. Not here: the lock itself (spin_lock.h), the caches.
#pragma once

#include "shim/pools/context_registry.h"

namespace cudapool::shim {

// The pool's lock, noting for thread_cache:auto whether it was contended.
class PoolLock {
 public:
  explicit PoolLock(ContextPool& p) : pool_(p) {
    const bool contended = !p.mutex.try_lock();
    if (contended) p.mutex.lock();
    if (p.caching_on_contention) count_acquisition(contended);
  }
  ~PoolLock() { pool_.mutex.unlock(); }
  PoolLock(const PoolLock&) = delete;
  PoolLock& operator=(const PoolLock&) = delete;

 private:
  void count_acquisition(bool contended);
  ContextPool& pool_;
};

}  // namespace cudapool::shim
