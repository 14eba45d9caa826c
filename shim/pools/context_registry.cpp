// SPDX-License-Identifier: Apache-2.0
// shim/pools/context_registry.cpp: see context_registry.h. Pools live in a fixed array of slots,
// one object per slot. A dropped pool's object is made over in place for a new context once its
// context is released and no other thread can reach it (pool_reach.h); until then a new context
// takes a fresh slot. Not here: what the pool does with memory (pool/, cuda_backend.h).
#include "shim/pools/context_registry.h"

#include <memory>

#include "shim/driver/real_driver.h"
#include "shim/pools/stream_registry.h"
#include "shim/recording/event_log.h"
#include "shim/support/diagnostics.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

namespace {

std::atomic<ContextPool*> g_slots[kMaxContextPools];
std::mutex g_create_mutex;

// Under g_create_mutex, for a dropped pool: whether it may be made over now. Its context's memory
// is released (until then the context may still exist, or the thread that dropped it is not done
// with it) and no other thread can reach it (pool_reach.h: why the seq_cst loads).
bool reusable(const ContextPool& p) {
  return p.dropped.load(std::memory_order_seq_cst) &&
         p.memory_released.load(std::memory_order_seq_cst) && out_of_other_threads_reach(p);
}

// Thread caches (thread_cache.h) never while a log or summary is written; always: on from the
// start; auto: once the pool's lock is found contended (pool_lock.h).
void set_caching(ContextPool& p) {
  const config::ThreadCacheMode caches = options().thread_cache;
  p.caching_on_contention = caches == config::ThreadCacheMode::kAuto && !reporting().any();
  p.window_acquisitions = 0;
  p.window_contended = 0;
  p.thread_caching.store(caches == config::ThreadCacheMode::kAlways && !reporting().any(),
                         std::memory_order_relaxed);
}

}  // namespace

ContextPool::ContextPool(CUcontext ctx, unsigned long long ctx_id, CUdevice dev,
                         bool is_primary_ctx, std::uint8_t context_number, int slot)
    : context(ctx),
      id(ctx_id),
      device(dev),
      primary(is_primary_ctx),
      ctx(context_number),
      log_sink(context_number),
      backend(ctx, dev, options().reuse_fence, slot),
      pool(options(), backend, dev, shim::log_sink(log_sink)) {
  set_caching(*this);
}

void drop_pool(ContextPool& p) {
  if (p.dropped.exchange(true, std::memory_order_seq_cst)) return;
  log_event(log::LogAction::kContextDropped, p.device, 0, 0, 0, 0, 0, p.ctx);
}

void release_dropped_pool(ContextPool& p) {
  if (!p.dropped.load(std::memory_order_acquire)) return;
  std::lock_guard<SpinLock> lock(p.mutex);  // a thread still inside the pool finishes first
  if (!p.dropped.load(std::memory_order_relaxed) ||
      p.memory_released.load(std::memory_order_relaxed)) {
    return;
  }
  p.backend.release_after_context_gone();
  // What the pool tracked goes back to the heap; the object waits to be made over.
  p.pool.forget_all();
  decltype(p.backtraces)().swap(p.backtraces);
  p.memory_released.store(true, std::memory_order_seq_cst);
}

namespace {

// A context reset or destroyed behind the shim's back (cudart's cudaDeviceReset) is found only
// after the fact: its pool is dropped and released at once.
void drop_gone_pool(ContextPool& p) {
  drop_pool(p);
  release_dropped_pool(p);
}

}  // namespace

ContextPool* pool_slot(int index) {
  return g_slots[index].load(std::memory_order_acquire);
}

bool pool_alive(ContextPool& p) {
  if (p.dropped.load(std::memory_order_acquire)) return false;
  if (real().cuCtxGetId == nullptr) return true;
  // Gone: the handle names no context, or a new one. Any other failure tells nothing about the
  // context (it is asked once more, then taken as alive): dropping a live pool would give its
  // blocks' addresses to the driver (found by tests/fakecuda/fault_sweep.sh).
  auto says_gone = [](CUresult r) {
    return r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_CONTEXT_IS_DESTROYED;
  };
  unsigned long long id = 0;
  CUresult r = real().cuCtxGetId(p.context, &id);
  if (r != CUDA_SUCCESS && !says_gone(r)) r = real().cuCtxGetId(p.context, &id);
  const bool gone = r == CUDA_SUCCESS ? id != p.id : says_gone(r);
  if (!gone) return true;
  drop_gone_pool(p);
  return false;
}

namespace {

// Under g_create_mutex, the object out of every other thread's reach (reusable): p made over
// for a new context, in place. What lock-free readers of a stale stream entry read (the reuse
// fence's atomics, the lock) stays valid; the pool's bookkeeping was freed when it was released.
void reuse_pool(ContextPool& p, CUcontext ctx, unsigned long long ctx_id, CUdevice dev,
                bool is_primary_ctx, std::uint8_t context_number) {
  std::lock_guard<SpinLock> lock(p.mutex);  // a thread cache's owner may look (thread_cache.cpp)
  p.generation.fetch_add(1, std::memory_order_release);
  p.context = ctx;
  p.id = ctx_id;
  p.device = dev;
  p.primary = is_primary_ctx;
  p.ctx = context_number;
  p.log_sink = PoolLogSink(context_number);
  p.backend.reuse_for(ctx, dev);  // before the pool: its constructor reads the total memory
  std::destroy_at(&p.pool);
  std::construct_at(&p.pool, options(), p.backend, dev, shim::log_sink(p.log_sink));
  p.backtraces.clear();
  p.thread_caches.clear();  // their owners find them stale by the generation
  set_caching(p);
  p.memory_released.store(false, std::memory_order_relaxed);
  p.dropped.store(false, std::memory_order_release);
}

// Under g_create_mutex, after free_number_on (whose walk dropped the pools whose context went
// behind the shim's back): the pool object for a new context. A dropped pool that is reusable is
// made over; else a new object takes the next unused slot; with every slot taken, it replaces a
// dropped pool that is not reusable yet (that object is left where it is, leaked: a thread may
// still reach it). nullptr: kMaxContextPools contexts are alive at once.
ContextPool* pool_for_new_context(CUcontext ctx, unsigned long long id, CUdevice dev, bool primary,
                                  std::uint8_t number) {
  const int n = pool_count();
  int dropped_slot = -1;
  for (int i = 0; i < n; ++i) {
    ContextPool* p = g_slots[i].load(std::memory_order_relaxed);
    if (!p->dropped.load(std::memory_order_acquire)) continue;
    if (reusable(*p)) {
      reuse_pool(*p, ctx, id, dev, primary, number);
      return p;
    }
    if (dropped_slot < 0) dropped_slot = i;
  }
  const int slot = n < kMaxContextPools ? n : dropped_slot;
  if (slot < 0) return nullptr;
  auto* made = new ContextPool(ctx, id, dev, primary, number, slot);
  g_slots[slot].store(made, std::memory_order_release);
  if (slot == n) note_pool_slot_taken(slot);
  return made;
}

// Under g_create_mutex: the lowest number no live pool of dev has (kMaxContextPools fit in it).
// The walk drops the pools whose context went behind the shim's back first (their
// context_dropped event then precedes the new pool's events, and their slots are free), so that a
// process with one context per device keeps 0.
std::uint8_t free_number_on(CUdevice dev) {
  bool taken[kMaxContextPools] = {};
  for_each_live_pool([&](ContextPool& p) {
    if (p.device == dev) taken[p.ctx] = true;
    return false;
  });
  int n = 0;
  while (n < kMaxContextPools - 1 && taken[n]) ++n;
  return static_cast<std::uint8_t>(n);
}

}  // namespace

ContextPool* current_pool(CUresult* error) {
  // The context's id, not its handle, names it: a handle can come back after a reset.
  unsigned long long id = 0;
  CUresult r = CUDA_SUCCESS;
  if (real().cuCtxGetId != nullptr) {
    r = real().cuCtxGetId(nullptr, &id);
    if (r == CUDA_SUCCESS && id == t_last_pool.id && t_last_pool.pool != nullptr &&
        !t_last_pool.pool->dropped.load(std::memory_order_relaxed)) {
      return t_last_pool.pool;
    }
  }
  CUcontext ctx = nullptr;
  if (r == CUDA_SUCCESS) r = real().cuCtxGetCurrent(&ctx);
  if (r == CUDA_SUCCESS && ctx == nullptr) r = CUDA_ERROR_INVALID_CONTEXT;
  if (r != CUDA_SUCCESS) {
    *error = r;
    return nullptr;
  }
  if (real().cuCtxGetId == nullptr && ctx == t_last_pool.context && t_last_pool.pool != nullptr &&
      !t_last_pool.pool->dropped.load(std::memory_order_relaxed)) {
    return t_last_pool.pool;
  }
  // The slow path. What this thread kept from its last calls is no longer in use; nor is a
  // dropped last pool. The pool found stays covered by the walk (or by g_create_mutex) until it
  // is the thread's last (pool_reach.h).
  forget_kept_pools();
  if (t_last_pool.pool != nullptr && t_last_pool.pool->dropped.load(std::memory_order_acquire)) {
    forget_last_pool();
  }
  ContextPool* found = nullptr;
  auto match = [&](ContextPool& p) {
    if (p.context != ctx) return false;
    if (p.id != id) {  // the same handle for a new context: the old one is gone
      drop_gone_pool(p);
      return false;
    }
    found = &p;
    return true;
  };
  for_each_pool(match);
  if (found == nullptr) {
    CUdevice dev = 0;
    r = real().cuCtxGetDevice(&dev);
    if (r != CUDA_SUCCESS) {
      *error = r;
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(g_create_mutex);
    for_each_pool(match);
    if (found == nullptr) {
      const std::uint8_t number = free_number_on(dev);
      // Is ctx the device's primary context (cudart's)? Only asked while the primary context is
      // active, so retain hands back the existing one and release restores the count.
      unsigned int flags = 0;
      int active = 0;
      bool primary = false;
      CUcontext primary_ctx = nullptr;
      // A check that fails is the caller's error: a pool taken for the wrong kind would outlive
      // a reset of the primary context, or go with one that is not its own.
      if (real().cuDevicePrimaryCtxGetState != nullptr) {
        r = real().cuDevicePrimaryCtxGetState(dev, &flags, &active);
        if (r == CUDA_SUCCESS && active) r = real().cuDevicePrimaryCtxRetain(&primary_ctx, dev);
        if (r != CUDA_SUCCESS) {
          *error = r;
          return nullptr;
        }
        if (active) {
          primary = primary_ctx == ctx;
          real().cuDevicePrimaryCtxRelease_v2(dev);
        }
      }
      logging();  // start the log (if any) before the pool's first event
      found = pool_for_new_context(ctx, id, dev, primary, number);
      if (found == nullptr) {
        *error = CUDA_SUCCESS;  // not pooled: the caller asks the driver
        CUDAPOOL_WARN_ONCE("%d CUDA contexts in use at once: contexts beyond them are not pooled",
                           kMaxContextPools);
        return nullptr;
      }
    }
    set_last_pool(ctx, id, found);  // before g_create_mutex is released
    return found;
  }
  set_last_pool(ctx, id, found);  // the walk still holds it
  return found;
}

ContextPool* pool_holding(std::uintptr_t ptr) {
  ContextPool* found = nullptr;
  for_each_live_pool([&](ContextPool& p) {
    std::lock_guard<SpinLock> lock(p.mutex);
    std::uintptr_t base = 0;
    std::size_t size = 0;
    if (!p.backend.segment_containing(ptr, &base, &size) && p.pool.find_allocated(ptr) == nullptr) {
      return false;
    }
    found = &p;
    return true;
  });
  return found;  // the walk holds it: the caller reads it
}

namespace {

// The pools dropped stay kept by this thread (pool_reach.h) until its next slow path: the hook
// releases them after the driver's call (release_dropped_pool), and none may be made over for a
// new context before that.
template <class Match>
std::vector<ContextPool*> drop_pools_where(Match&& match) {
  forget_kept_pools();
  std::vector<ContextPool*> dropped;
  for_each_pool([&](ContextPool& p) {
    if (match(p)) {
      drop_pool(p);
      keep_pool(&p);
      dropped.push_back(&p);
    }
    return false;
  });
  forget_last_pool();
  return dropped;
}

}  // namespace

std::vector<ContextPool*> drop_context_pools(CUcontext ctx) {
  return drop_pools_where([&](const ContextPool& p) { return p.context == ctx; });
}

std::vector<ContextPool*> drop_primary_pools(CUdevice dev) {
  return drop_pools_where([&](const ContextPool& p) { return p.device == dev && p.primary; });
}

CUresult note_stream_created(CUstream stream, unsigned int flags, const char* entry) {
  const bool nonblocking = (flags & CU_STREAM_NON_BLOCKING) != 0;
  const bool track = options().reuse_fence == config::ReuseFence::kAuto;
  CUresult error = CUDA_SUCCESS;
  ContextPool* p = track ? current_pool(&error) : nullptr;
  // The fences must mark a non-blocking stream's work: without its pool it cannot be tracked.
  if (track && nonblocking && p == nullptr && error != CUDA_SUCCESS) return error;
  if (!reporting().log_template.empty()) {
    log_stream_event(log::LogAction::kStreamCreated, reinterpret_cast<std::uint64_t>(stream), flags,
                     entry);
  }
  if (!track) return CUDA_SUCCESS;
  ReuseFence* fence = p != nullptr ? &p->backend.fence() : nullptr;
  TrackedStream* entry_of_stream = register_stream(stream, nonblocking, fence);
  if (p == nullptr || entry_of_stream == nullptr || !nonblocking) return CUDA_SUCCESS;
  std::lock_guard<SpinLock> lock(p->mutex);
  p->backend.fence().add_stream(stream, entry_of_stream);
  return CUDA_SUCCESS;
}

void note_stream_destroyed(CUstream stream) {
  if (options().reuse_fence != config::ReuseFence::kAuto) return;
  TrackedStream* entry = unregister_stream(stream);
  if (entry == nullptr || !entry->nonblocking.load(std::memory_order_relaxed)) return;
  ReuseFence* fence = entry->fence.load(std::memory_order_acquire);
  if (fence == nullptr) return;
  for_each_pool([&](ContextPool& p) {
    if (&p.backend.fence() != fence) return false;
    std::lock_guard<SpinLock> lock(p.mutex);
    p.backend.fence().retire_stream(stream, entry);
    return true;
  });
}

}  // namespace cudapool::shim
