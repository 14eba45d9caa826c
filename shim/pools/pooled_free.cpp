// SPDX-License-Identifier: Apache-2.0
// shim/pools/pooled_free.cpp: see pooled_free.h.
#include "shim/pools/pooled_free.h"

#include "shim/pools/pool_lock.h"
#include "shim/pools/thread_cache.h"
#include "shim/recording/event_log.h"
#include "shim/support/diagnostics.h"

namespace cudapool::shim {

namespace {

// Frees ptr in pool p if an allocated block starts there. Takes p's lock.
bool free_in(ContextPool& p, std::uintptr_t ptr) {
  PoolLock lock(p);
  if (!p.thread_caches.empty() && thread_cache_release_held(p, ptr) == HeldBlock::kAlreadyFree) {
    return false;  // freed before and kept in a thread's cache: a double free
  }
  if (p.pool.free(ptr) != pool::FreeStatus::kOk) return false;
  if (!p.backtraces.empty()) p.backtraces.erase(ptr);
  return true;
}

}  // namespace

PooledFree free_pooled_pointer(ContextPool* current, std::uintptr_t ptr) {
  if (current != nullptr && (thread_cache_free(*current, ptr) || free_in(*current, ptr))) {
    return PooledFree::kFreed;
  }
  if (for_each_live_pool([&](ContextPool& p) { return &p != current && free_in(p, ptr); })) {
    return PooledFree::kFreed;
  }
  // Not a block the pool handed out. Inside one of its segments it is a double free or an
  // interior pointer: the driver must not see it (it would free a whole segment), and answers
  // such a pointer with CUDA_ERROR_INVALID_VALUE.
  ContextPool* owner = pool_holding(ptr);
  if (owner == nullptr) return PooledFree::kNotPooled;
  log_event(log::LogAction::kBadFree, owner->device, ptr, 0, CUDA_ERROR_INVALID_VALUE, 0, 0,
            owner->ctx);
  CUDAPOOL_WARN_ONCE(
      "cuMemFree of 0x%llx, which is not an allocated block (double free or interior pointer): "
      "CUDA_ERROR_INVALID_VALUE",
      static_cast<unsigned long long>(ptr));
  return PooledFree::kRefused;
}

}  // namespace cudapool::shim
