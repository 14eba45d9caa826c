// SPDX-License-Identifier: Apache-2.0
// shim/pools/pooled_alloc.h: where cuMemAlloc_v2's request goes once its context's pool is known,
// the pair of pooled_free.h: the calling thread's cache (thread_cache.h, inline, no lock), else
// the pool under its lock. On out-of-memory the threads' caches are given back and the pool asked
// once more; a failure comes back with what the pool knew of it, for the hook to say. With a log
// or a snapshot the call's time, thread, Python stack and backtrace go with the block (the log's
// seq comes back from the log to the pool itself: pool/events.h). Not here: finding the pool
// (context_registry.h, current_pool), saying a failure (the OOM report and snapshot: the hook).
#pragma once

#include <cstddef>
#include <cstdint>

#include "pool/oom.h"
#include "pool/refusal.h"
#include "shim/pools/context_registry.h"
#include "shim/pools/thread_cache.h"

namespace cudapool::shim {

// Why the pool served no block: out-of-memory (with the pool's account of it) or the device's
// refusal of another kind (with the driver's error).
struct AllocFailure {
  pool::AllocStatus status = pool::AllocStatus::kOk;
  CUresult error = CUDA_SUCCESS;
  pool::OomState oom;
  pool::DeviceRefusal refusal;
};

// The pool's part, after the thread's cache missed (miss: whether to track the block).
bool alloc_from_pool(ContextPool& p, std::size_t bytes, const CacheMiss& miss,
                     std::uint32_t python_stack, std::uintptr_t* ptr, AllocFailure* failure);

// A block of at least `bytes` from p: true with *ptr set, else false with *failure filled.
// python_stack: the caller's Python stack id when stacks are taken (take_python_stack), else 0.
inline bool alloc_pooled(ContextPool& p, std::size_t bytes, std::uint32_t python_stack,
                         std::uintptr_t* ptr, AllocFailure* failure) {
  CacheMiss miss;
  if (thread_cache_alloc(p, bytes, ptr, &miss)) return true;
  return alloc_from_pool(p, bytes, miss, python_stack, ptr, failure);
}

}  // namespace cudapool::shim
