// SPDX-License-Identifier: Apache-2.0
// shim/pools/context_registry.h: one caching pool per CUDA context, created on the context's first
// allocation, and the routing of a free (or a pointer query) to the pool that owns the pointer,
// whatever context is current. A context that is destroyed or reset has its pool dropped without
// any CUDA call: the driver already took the memory. A pool object is never freed: once dropped,
// released and out of every other thread's reach, it is made over for the next new context
// (pool_reach.h says how the registry knows that no thread can still reach it). Not here: the
// policy (pool/), the driver calls (cuda_backend.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "pool/device_pool.h"
#include "shim/driver/cuda_api.h"
#include "shim/pools/cuda_backend.h"
#include "shim/pools/pool_reach.h"
#include "shim/pools/pool_slots.h"
#include "shim/pools/spin_lock.h"
#include "shim/recording/event_log.h"

namespace cudapool::shim {

class ThreadCache;

struct ContextPool {
  ContextPool(CUcontext ctx, unsigned long long id, CUdevice dev, bool primary, std::uint8_t number,
              int slot);
  // The context's identity and everything below but the lock and the atomics are set when the
  // object is made and again when it is made over for a new context, both times out of every
  // other thread's reach; the object's slot stays the same.
  CUcontext context;
  unsigned long long id;  // cuCtxGetId: unique for the process's life, unlike the handle
  CUdevice device;
  bool primary;  // the device's primary context (cudart's)
  // The lowest number no other live pool of the device had when this one was made: 0 in a
  // process with one context per device. The context's number: the log's "ctx" (LogRecord::ctx).
  std::uint8_t ctx;
  PoolLogSink log_sink;
  // The lock and the flag read without it sit on cache lines of their own: threads waiting for
  // the lock, or checking the flag, do not pull the lines the lock holder writes.
  alignas(64) SpinLock mutex;  // guards backend and pool
  alignas(64) CudaBackend backend;
  pool::DevicePool pool;
  // Return addresses of allocated blocks, kept only with CUDAPOOL_BACKTRACE (leak reports).
  std::unordered_map<std::uintptr_t, std::vector<std::uint64_t>> backtraces;
  // Under mutex: the threads' caches of this pool (thread_cache.h), and thread_cache:auto's count
  // of contended lock acquisitions (pool_lock.h).
  std::vector<ThreadCache*> thread_caches;
  bool caching_on_contention = false;
  std::uint32_t window_acquisitions = 0;
  std::uint32_t window_contended = 0;
  alignas(64) std::atomic<bool> dropped{false};
  std::atomic<bool> memory_released{false};  // release_dropped_pool ran (set at its end)
  std::atomic<bool> thread_caching{false};   // set once per context, read by every pooled call
  // How many times the object was made over for a new context: a thread's cache made for an
  // earlier one is stale (thread_cache.cpp). Changed under mutex, before dropped is cleared.
  std::atomic<std::uint64_t> generation{0};
};

inline constexpr int kMaxContextPools = 256;

// The pool of the current context, made on first use. nullptr with *error set when there is no
// usable current context (the driver's own error: no context, not initialized, ...); nullptr
// with *error CUDA_SUCCESS when the context is not pooled (kMaxContextPools contexts alive at
// once): the caller passes the call to the driver.
ContextPool* current_pool(CUresult* error);

// Calls fn(pool) for every live pool until it returns true; returns whether one did.
template <class Fn>
bool for_each_pool(Fn&& fn);

// for_each_pool over the pools whose context still exists (pool_alive: one driver call per pool,
// dead ones dropped on the way). For the slow paths that answer for a pointer or a device.
template <class Fn>
bool for_each_live_pool(Fn&& fn);

// The live pool whose segments hold ptr, or nullptr.
ContextPool* pool_holding(std::uintptr_t ptr);

// Whether p's context still exists (a context reset or destroyed behind the shim's back, e.g.
// through cudart's private interface, leaves a pool whose handle may even be reused). A dead
// pool is dropped. One driver call; for the slow paths.
bool pool_alive(ContextPool& p);

// Forgets pool p (its context is gone, or about to go) and logs context_dropped for its device,
// once.
void drop_pool(ContextPool& p);

// Once p's context is gone: gives back the memory the driver keeps past a context (expandable
// segments' pages and address ranges, CudaBackend::release_after_context_gone) and forgets the
// pool's bookkeeping. Once per pool; only for a dropped pool. From then on the object may be made
// over for a new context, once no other thread can reach it.
void release_dropped_pool(ContextPool& p);

// Forgets the pools of a context (destroyed) or of a device's primary context (reset, or
// released for the last time), once the call succeeded (hooks_context.cpp); returns them, for
// release_dropped_pool. They stay out of reuse until the calling thread's next slow path.
std::vector<ContextPool*> drop_context_pools(CUcontext ctx);
std::vector<ContextPool*> drop_primary_pools(CUdevice dev);

// A stream made through a hook (cuStreamCreate, cuStreamCreateWithPriority,
// cuGreenCtxStreamCreate; entry names it): registered for the reuse fences (stream_registry.h)
// with the current context's pool, and logged (stream_created); CUDA_SUCCESS, or for a
// non-blocking stream whose pool cannot be found (a driver call failed) that call's error: the
// stream is not registered, and the hook destroys it. / One about to be destroyed.
CUresult note_stream_created(CUstream stream, unsigned int flags, const char* entry);
void note_stream_destroyed(CUstream stream);

// --- implementation detail of for_each_pool -----------------------------------------------------
ContextPool* pool_slot(int index);  // index below pool_count() (pool_slots.h)

// A walk keeps the pool it looks at, and the one it found, from being made over (pool_reach.h).
template <class Fn>
bool for_each_pool(Fn&& fn) {
  PoolWalk walk;
  const int n = pool_count();
  for (int i = 0; i < n; ++i) {
    ContextPool* p = pool_slot(i);
    if (p == nullptr) continue;
    walk.at(p);  // before the flag is read: p is not made over while the walk looks at it
    if (!p->dropped.load(std::memory_order_seq_cst) && fn(*p)) {
      walk.hold();  // the caller may go on using it
      return true;
    }
  }
  return false;
}

template <class Fn>
bool for_each_live_pool(Fn&& fn) {
  return for_each_pool([&](ContextPool& p) { return pool_alive(p) && fn(p); });
}

}  // namespace cudapool::shim
