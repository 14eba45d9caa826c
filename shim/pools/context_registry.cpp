// shim/pools/context_registry.cpp: see context_registry.h. Pools live in a fixed array of slots; a
// new pool takes over the slot of a dropped one. Dropped pools are leaked on purpose (another
// thread may still be inside one; their memory belonged to a context that no longer exists).
#include "shim/pools/context_registry.h"

#include "shim/interpose/real_driver.h"
#include "shim/lifecycle/settings.h"
#include "shim/pools/stream_registry.h"
#include "shim/recording/event_log.h"
#include "shim/support/diagnostics.h"

namespace cudapool::shim {

namespace {

std::atomic<ContextPool*> g_slots[kMaxContextPools];
std::mutex g_create_mutex;

thread_local CUcontext t_last_context = nullptr;
thread_local unsigned long long t_last_id = 0;
thread_local ContextPool* t_last_pool = nullptr;

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
  // Thread caches (thread_cache.h) never while a log or summary is written; always: on from the
  // start; auto: once the pool's lock is found contended (pool_lock.h).
  const config::ThreadCacheMode caches = options().thread_cache;
  caching_on_contention = caches == config::ThreadCacheMode::kAuto && !reporting().any();
  thread_caching.store(caches == config::ThreadCacheMode::kAlways && !reporting().any(),
                       std::memory_order_relaxed);
}

void drop_pool(ContextPool& p) {
  if (p.dropped.exchange(true, std::memory_order_acq_rel)) return;
  log_event(log::LogAction::kContextDropped, p.device, 0, 0, 0, 0, 0, p.ctx);
}

void release_dropped_pool(ContextPool& p) {
  if (!p.dropped.load(std::memory_order_acquire)) return;
  if (p.memory_released.exchange(true, std::memory_order_acq_rel)) return;
  std::lock_guard<SpinLock> lock(p.mutex);  // a thread still inside the pool finishes first
  p.backend.release_after_context_gone();
  // The object stays (pools.cpp's header); what it tracked does not.
  p.pool.forget_all();
  decltype(p.backtraces)().swap(p.backtraces);
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
  unsigned long long id = 0;
  if (real().cuCtxGetId(p.context, &id) == CUDA_SUCCESS && id == p.id) return true;
  drop_gone_pool(p);
  return false;
}

namespace {

// Under g_create_mutex, after free_number_on (whose walk dropped the pools whose context went
// behind the shim's back): the slot for a new pool. A dropped pool's slot is taken over (its
// object stays where it is, leaked: a thread may still be inside it), so a process that creates
// and destroys contexts, or resets the device, again and again never runs out; else the next
// unused slot. -1: kMaxContextPools contexts are alive at once.
int slot_for_new_pool() {
  const int n = pool_count();
  for (int i = 0; i < n; ++i) {
    if (g_slots[i].load(std::memory_order_relaxed)->dropped.load(std::memory_order_acquire)) {
      return i;
    }
  }
  return n < kMaxContextPools ? n : -1;
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
    if (r == CUDA_SUCCESS && id == t_last_id && t_last_pool != nullptr &&
        !t_last_pool->dropped.load(std::memory_order_relaxed)) {
      return t_last_pool;
    }
  }
  CUcontext ctx = nullptr;
  if (r == CUDA_SUCCESS) r = real().cuCtxGetCurrent(&ctx);
  if (r == CUDA_SUCCESS && ctx == nullptr) r = CUDA_ERROR_INVALID_CONTEXT;
  if (r != CUDA_SUCCESS) {
    *error = r;
    return nullptr;
  }
  if (real().cuCtxGetId == nullptr && ctx == t_last_context && t_last_pool != nullptr &&
      !t_last_pool->dropped.load(std::memory_order_relaxed)) {
    return t_last_pool;
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
      const int slot = slot_for_new_pool();
      if (slot < 0) {
        *error = CUDA_SUCCESS;  // not pooled: the caller asks the driver
        CUDAPOOL_WARN_ONCE("%d CUDA contexts in use at once: contexts beyond them are not pooled",
                           kMaxContextPools);
        return nullptr;
      }
      // Is ctx the device's primary context (cudart's)? Only asked while the primary context is
      // active, so retain hands back the existing one and release restores the count.
      unsigned int flags = 0;
      int active = 0;
      bool primary = false;
      CUcontext primary_ctx = nullptr;
      if (real().cuDevicePrimaryCtxGetState != nullptr &&
          real().cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && active &&
          real().cuDevicePrimaryCtxRetain(&primary_ctx, dev) == CUDA_SUCCESS) {
        primary = primary_ctx == ctx;
        real().cuDevicePrimaryCtxRelease_v2(dev);
      }
      logging();  // start the log (if any) before the pool's first event
      found = new ContextPool(ctx, id, dev, primary, number, slot);
      g_slots[slot].store(found, std::memory_order_release);
      if (slot == pool_count()) note_pool_slot_taken(slot);
    }
  }
  t_last_context = ctx;
  t_last_id = id;
  t_last_pool = found;
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
  return found;
}

namespace {

template <class Match>
std::vector<ContextPool*> drop_pools_where(Match&& match) {
  std::vector<ContextPool*> dropped;
  for_each_pool([&](ContextPool& p) {
    if (match(p)) {
      drop_pool(p);
      dropped.push_back(&p);
    }
    return false;
  });
  t_last_pool = nullptr;
  t_last_context = nullptr;
  t_last_id = 0;
  return dropped;
}

}  // namespace

std::vector<ContextPool*> drop_context_pools(CUcontext ctx) {
  return drop_pools_where([&](const ContextPool& p) { return p.context == ctx; });
}

std::vector<ContextPool*> drop_primary_pools(CUdevice dev) {
  return drop_pools_where([&](const ContextPool& p) { return p.device == dev && p.primary; });
}

void note_stream_created(CUstream stream, unsigned int flags, const char* entry) {
  const bool nonblocking = (flags & CU_STREAM_NON_BLOCKING) != 0;
  if (!reporting().log_template.empty()) {
    log_stream_event(log::LogAction::kStreamCreated, reinterpret_cast<std::uint64_t>(stream), flags,
                     entry);
  }
  if (options().reuse_fence != config::ReuseFence::kAuto) return;
  CUresult error = CUDA_SUCCESS;
  ContextPool* p = current_pool(&error);
  ReuseFence* fence = p != nullptr ? &p->backend.fence() : nullptr;
  TrackedStream* entry_of_stream = register_stream(stream, nonblocking, fence);
  if (p == nullptr || entry_of_stream == nullptr || !nonblocking) return;
  std::lock_guard<SpinLock> lock(p->mutex);
  p->backend.fence().add_stream(stream, entry_of_stream);
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
