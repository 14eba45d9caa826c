// SPDX-License-Identifier: Apache-2.0
// shim/pools/pooled_alloc.cpp: see pooled_alloc.h.
#include "shim/pools/pooled_alloc.h"

#include "shim/pools/pool_lock.h"
#include "shim/recording/event_log.h"
#include "shim/support/clock.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

namespace {

// With a log or a snapshot: what the call tells the pool's alloc event (its start, thread and
// Python stack; the native backtrace into current_call()).
[[gnu::noinline]] pool::AllocTag reported_call(std::uint32_t python_stack) {
  const pool::AllocTag tag{0, monotonic_ns(), thread_id(), python_stack};
  current_call().start_ns = tag.t_ns;
  capture_backtrace(python_stack);
  return tag;
}

// Under p's lock, for a block just handed out with a log or a snapshot: its native backtrace.
[[gnu::noinline]] void keep_backtrace(ContextPool& p, std::uintptr_t ptr) {
  const CallInfo& call = current_call();
  if (call.frames > 0) p.backtraces[ptr].assign(call.backtrace, call.backtrace + call.frames);
}

// Under p's lock: the pool's account of the failed request r.
[[gnu::cold]] void note_failure(const ContextPool& p, const pool::AllocResult& r,
                                AllocFailure* failure) {
  failure->status = r.status;
  if (r.status == pool::AllocStatus::kOutOfMemory) failure->oom = p.pool.last_oom();
  if (r.status == pool::AllocStatus::kBackendError) {
    failure->refusal = p.pool.last_refusal();
    failure->error = static_cast<CUresult>(r.backend_error);
  }
}

}  // namespace

bool alloc_from_pool(ContextPool& p, std::size_t bytes, const CacheMiss& miss,
                     std::uint32_t python_stack, std::uintptr_t* ptr, AllocFailure* failure) {
  const bool report = reporting().any();
  const pool::AllocTag tag = report ? reported_call(python_stack) : pool::AllocTag{};
  PoolLock lock(p);
  pool::AllocResult r = p.pool.malloc(bytes, 0, tag);
  // Blocks kept by threads' caches are the last memory to try before out-of-memory.
  if (r.status == pool::AllocStatus::kOutOfMemory && !p.thread_caches.empty() &&
      thread_cache_flush_all(p)) {
    r = p.pool.malloc(bytes, 0, tag);
  }
  if (r.status != pool::AllocStatus::kOk) {
    note_failure(p, r, failure);
    return false;
  }
  if (miss.cache != nullptr) thread_cache_track(p, miss, r.ptr, r.block_size);
  if (report) keep_backtrace(p, r.ptr);
  *ptr = r.ptr;
  return true;
}

}  // namespace cudapool::shim
