// SPDX-License-Identifier: Apache-2.0
// shim/interpose/hooks_memory.cpp: the pooled entry points. cuMemAlloc_v2 is served from the
// calling thread's cache (thread_cache.h) or the current context's pool; cuMemFree_v2 returns a
// block to the thread's cache or the pool that owns it (any context, pooled_free.h), and passes
// pointers no pool owns to the driver; both refuse, as the driver does, what a stream capture
// forbids (stream_capture.h); cuMemGetInfo_v2, cuMemGetAddressRange_v2, pointer range and
// context attributes and cuIpcGetMemHandle are answered for pooled blocks as if each block were its
// own allocation. Each hook is also the exported symbol for programs linked with -lcuda.
#include <algorithm>
#include <mutex>

#include "shim/driver/export.h"
#include "shim/driver/real_driver.h"
#include "shim/interpose/hooks.h"
#include "shim/pools/context_registry.h"
#include "shim/pools/pooled_alloc.h"
#include "shim/pools/pooled_free.h"
#include "shim/pools/stream_capture.h"
#include "shim/pools/thread_cache.h"
#include "shim/recording/event_log.h"
#include "shim/recording/oom_report.h"
#include "shim/reports/oom_snapshot.h"
#include "shim/support/clock.h"
#include "shim/support/diagnostics.h"
#include "shim/support/guard.h"
#include "shim/support/settings.h"

using namespace cudapool::shim;

namespace {

// Where ptr lies among the live pools' memory. Pools whose context is gone (reset behind the
// shim's back) are not looked at: the driver answers for such a pointer.
enum class PooledPlace : std::uint8_t {
  kOutside,  // in no pool's segment or reservation
  kBlock,    // in an allocated block: *base, *size and *context describe it
  kFreed,    // in a segment or reservation but in no allocated block, or in a block the program
             // freed into its thread's cache: memory the driver would have released at the free
};

PooledPlace locate_pooled(std::uintptr_t ptr, std::uintptr_t* base, std::size_t* size,
                          CUcontext* context = nullptr) {
  PooledPlace place = PooledPlace::kOutside;
  for_each_live_pool([&](ContextPool& p) {
    std::lock_guard<SpinLock> lock(p.mutex);
    const cudapool::pool::Block* b = p.pool.find_allocated_containing(ptr);
    if (b != nullptr && !thread_cache_holds_freed(*b)) {
      *base = b->ptr;
      *size = b->size;
      if (context != nullptr) *context = p.context;
      place = PooledPlace::kBlock;
      return true;
    }
    std::uintptr_t segment_base = 0;
    std::size_t segment_size = 0;
    if (b != nullptr || p.backend.segment_containing(ptr, &segment_base, &segment_size) ||
        p.backend.in_address_reservation(ptr)) {
      place = PooledPlace::kFreed;
      return true;
    }
    return false;
  });
  return place;
}

}  // namespace

#if defined(CUDAPOOL_FLOOR_HOOKS)
// The floor of interposition (shim/CMakeLists.txt, bench/): the benchmark's libcudapool_floor*.so
// replace the two pooled hooks by these, which reach the same place through the same dlsym and
// cuGetProcAddress path and do nothing but hand back one fixed address (level 2: after asking the
// driver for the current context's id, as the pooled hook does). Never in libcudapool.so.
namespace {
constexpr CUdeviceptr kFloorPointer = 0x7f0000000000ULL;
inline void floor_context_id() {
  if constexpr (CUDAPOOL_FLOOR_HOOKS >= 2) {
    unsigned long long id = 0;
    if (load_real_driver() && real().cuCtxGetId != nullptr) real().cuCtxGetId(nullptr, &id);
  }
}
}  // namespace

CUDAPOOL_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  floor_context_id();
  *dptr = kFloorPointer;
  return CUDA_SUCCESS;
}

CUDAPOOL_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  floor_context_id();
  return dptr == kFloorPointer || dptr == 0 ? CUDA_SUCCESS : CUDAPOOL_PASS(cuMemFree_v2, dptr);
}
#else
namespace {

// What the program hears of an allocation the pool could not serve: the OOM report (and
// CUDAPOOL_OOM_SNAPSHOT), or the device's refusal.
[[gnu::cold]] CUresult say_alloc_failure(const ContextPool& p, const AllocFailure& failure) {
  if (failure.status == cudapool::pool::AllocStatus::kOutOfMemory) {
    report_oom(failure.oom, p.device);
    if (!reporting().oom_snapshot.empty()) write_oom_snapshot(failure.oom, p.device);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  report_refusal(failure.refusal, p.device);
  return failure.error != CUDA_SUCCESS ? failure.error : CUDA_ERROR_UNKNOWN;
}

}  // namespace

// The cached path: the context's pool (context_registry.cpp, current_pool), then the thread's
// cache or the pool (pooled_alloc.h); everything else is behind a call that is not taken.
CUDAPOOL_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (!pooling()) return CUDAPOOL_PASS(cuMemAlloc_v2, dptr, bytesize);
  // During a stream capture that forbids it, the driver's refusal (stream_capture.h), before the
  // arguments are looked at: the driver refuses a call of 0 bytes there with the capture's error
  // and invalidates the capture (H200, driver 580.159.04, tests/gpu/capture_rules.cpp).
  if (const CUresult r = capture_refusal(); r != CUDA_SUCCESS) [[unlikely]]
    return r;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  // The Python stack first (CUDAPOOL_BACKTRACE=python), while this frame has nothing to destroy: a
  // thread that Python ends as it waits for the GIL during finalization (pthread_exit) is unwound
  // through here by libgcc_s, which cannot run a cleanup of the shim's (its unwinder is static).
  const std::uint32_t python_stack = reporting().python_frames > 0 ? take_python_stack() : 0;
  ReentrancyGuard guard;
  CUresult error = CUDA_SUCCESS;
  ContextPool* p = current_pool(&error);
  if (p == nullptr) return error != CUDA_SUCCESS ? error : real().cuMemAlloc_v2(dptr, bytesize);
  std::uintptr_t ptr = 0;
  AllocFailure failure;
  if (!alloc_pooled(*p, bytesize, python_stack, &ptr, &failure)) [[unlikely]] {
    return say_alloc_failure(*p, failure);
  }
  *dptr = static_cast<CUdeviceptr>(ptr);
  return CUDA_SUCCESS;
}

CUDAPOOL_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (!pooling() || dptr == 0) return CUDAPOOL_PASS(cuMemFree_v2, dptr);
  if (const CUresult r = capture_refusal(); r != CUDA_SUCCESS) [[unlikely]]
    return r;
  ReentrancyGuard guard;
  const auto ptr = static_cast<std::uintptr_t>(dptr);
  if (reporting().any()) current_call().start_ns = monotonic_ns();
  CUresult ignored = CUDA_SUCCESS;
  ContextPool* current = current_pool(&ignored);
  if (CUresult answer = CUDA_SUCCESS;
      pooled_free_answer(free_pooled_pointer(current, ptr), &answer)) {
    return answer;
  }
  const CUresult r = real().cuMemFree_v2(dptr);
  log_event(cudapool::log::LogAction::kFreeUnowned, current != nullptr ? current->device : 0, dptr,
            0, r);
  return r;
}

#endif  // CUDAPOOL_FLOOR_HOOKS

CUDAPOOL_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (!pooling()) return CUDAPOOL_PASS(cuMemGetInfo_v2, free, total);
  ReentrancyGuard guard;
  CUdevice device = 0;
  // No context: the driver's answer. Another failure: its error (the driver's answer without the
  // pool's idle memory would be wrong).
  if (const CUresult r = real().cuCtxGetDevice(&device); r != CUDA_SUCCESS) {
    return r == CUDA_ERROR_INVALID_CONTEXT ? CUDAPOOL_PASS(cuMemGetInfo_v2, free, total) : r;
  }
  // Idle cached memory is free for the program; with a memory fraction the cap is the total.
  std::size_t idle = 0;
  std::size_t reserved = 0;
  std::size_t cap = 0;
  // A pool whose context was reset behind the shim's back holds no memory any more (what the
  // driver kept past the context is given back during the walk: the device is asked after it).
  for_each_live_pool([&](ContextPool& p) {
    if (p.device != device) return false;
    std::lock_guard<SpinLock> lock(p.mutex);
    // Blocks still behind a reuse fence are free for the program too: they come back at the
    // next allocation that needs them.
    idle += p.pool.idle_cached_bytes() + p.pool.pending_fence_bytes() + thread_cached_bytes(p);
    reserved += p.pool.reserved_bytes();
    if (p.pool.allowed_memory()) cap = std::max(cap, *p.pool.allowed_memory());
    return false;
  });
  size_t device_free = 0;
  size_t device_total = 0;
  const CUresult r = real().cuMemGetInfo_v2(&device_free, &device_total);
  if (r != CUDA_SUCCESS) return r;
  std::size_t out_free = device_free + idle;
  std::size_t out_total = device_total;
  const double fraction = options().per_process_memory_fraction;
  if (fraction < 1.0) {
    if (cap == 0) cap = static_cast<std::size_t>(fraction * static_cast<double>(device_total));
    const std::size_t in_use = reserved - idle;
    out_free = std::min(out_free, cap > in_use ? cap - in_use : 0);
    out_total = cap;
  }
  if (free != nullptr) *free = out_free;
  if (total != nullptr) *total = out_total;
  return CUDA_SUCCESS;
}

CUDAPOOL_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize,
                                                 CUdeviceptr dptr) {
  if (!pooling()) return CUDAPOOL_PASS(cuMemGetAddressRange_v2, pbase, psize, dptr);
  ReentrancyGuard guard;
  // Without a current context the driver answers CUDA_ERROR_INVALID_CONTEXT for any pointer
  // (measured on the H200, docs/gpu-validation.md); the pool must not answer in its place.
  // A failed lookup of the current context is answered with its error (the driver would describe
  // the whole segment).
  CUcontext current = nullptr;
  if (const CUresult r = real().cuCtxGetCurrent(&current); r != CUDA_SUCCESS) return r;
  if (current == nullptr) return real().cuMemGetAddressRange_v2(pbase, psize, dptr);
  std::uintptr_t base = 0;
  std::size_t size = 0;
  switch (locate_pooled(static_cast<std::uintptr_t>(dptr), &base, &size)) {
    case PooledPlace::kBlock:
      if (pbase != nullptr) *pbase = static_cast<CUdeviceptr>(base);
      if (psize != nullptr) *psize = size;
      return CUDA_SUCCESS;
    case PooledPlace::kFreed:
      // The driver would describe the whole segment; without the pool the memory would be gone.
      return CUDA_ERROR_NOT_FOUND;
    case PooledPlace::kOutside:
      break;
  }
  return real().cuMemGetAddressRange_v2(pbase, psize, dptr);
}

namespace {

// Rewrites an attribute of a pooled pointer that describes its allocation: the range (the block,
// not the segment) and the context (the pool's: pages of an expandable segment belong to no
// context in the driver, a cudaMalloc'd block does). False for every other attribute or pointer.
bool pooled_block_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr dptr) {
  if (attribute != CU_POINTER_ATTRIBUTE_RANGE_START_ADDR &&
      attribute != CU_POINTER_ATTRIBUTE_RANGE_SIZE && attribute != CU_POINTER_ATTRIBUTE_CONTEXT) {
    return false;
  }
  std::uintptr_t base = 0;
  std::size_t size = 0;
  CUcontext context = nullptr;
  if (data == nullptr || locate_pooled(static_cast<std::uintptr_t>(dptr), &base, &size, &context) !=
                             PooledPlace::kBlock) {
    return false;
  }
  if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) {
    *static_cast<CUdeviceptr*>(data) = static_cast<CUdeviceptr>(base);
  } else if (attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE) {
    *static_cast<size_t*>(data) = size;
  } else {
    *static_cast<CUcontext*>(data) = context;
  }
  return true;
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                               CUdeviceptr dptr) {
  if (!pooling()) return CUDAPOOL_PASS(cuPointerGetAttribute, data, attribute, dptr);
  ReentrancyGuard guard;
  if (pooled_block_attribute(data, attribute, dptr)) return CUDA_SUCCESS;
  return real().cuPointerGetAttribute(data, attribute, dptr);
}

CUDAPOOL_EXPORT CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes,
                                                void** data, CUdeviceptr dptr) {
  if (!pooling()) return CUDAPOOL_PASS(cuPointerGetAttributes, count, attributes, data, dptr);
  ReentrancyGuard guard;
  const CUresult r = real().cuPointerGetAttributes(count, attributes, data, dptr);
  if (r != CUDA_SUCCESS || attributes == nullptr || data == nullptr) return r;
  for (unsigned int i = 0; i < count; ++i) pooled_block_attribute(data[i], attributes[i], dptr);
  return r;
}

CUDAPOOL_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  if (!pooling()) return CUDAPOOL_PASS(cuIpcGetMemHandle, handle, dptr);
  ReentrancyGuard guard;
  // A handle names a whole driver allocation: the importer maps the segment's base. That is the
  // caller's memory only when the block starts its segment. An expandable segment's pages are no
  // cuMemAlloc allocation (what legacy IPC exports), and a page exported would still not be the
  // block. Segments of a context reset behind the shim's back are gone: the address may belong to
  // a new allocation now.
  const auto ptr = static_cast<std::uintptr_t>(dptr);
  enum class Refusal { kNone, kInsideSegment, kExpandable } refusal = Refusal::kNone;
  int device = 0;
  for_each_live_pool([&](ContextPool& p) {
    std::lock_guard<SpinLock> lock(p.mutex);
    std::uintptr_t base = 0;
    std::size_t size = 0;
    if (p.backend.segment_containing(ptr, &base, &size)) {
      if (base != ptr) refusal = Refusal::kInsideSegment;
    } else if (p.backend.in_address_reservation(ptr)) {
      refusal = Refusal::kExpandable;
    } else {
      return false;
    }
    device = p.device;
    return true;
  });
  if (refusal == Refusal::kNone) return real().cuIpcGetMemHandle(handle, dptr);
  log_event(cudapool::log::LogAction::kIpcRefused, device, dptr, 0, CUDA_ERROR_INVALID_VALUE);
  // Once per kind on stderr; the log records every refusal.
  if (refusal == Refusal::kInsideSegment) {
    CUDAPOOL_WARN_ONCE(
        "cuIpcGetMemHandle(0x%llx): the block lies inside a pooled segment, and an IPC handle "
        "would map other memory in the importing process; refused with "
        "CUDA_ERROR_INVALID_VALUE (run with CUDAPOOL_DISABLE=1 to share such memory)",
        static_cast<unsigned long long>(dptr));
  } else {
    CUDAPOOL_WARN_ONCE(
        "cuIpcGetMemHandle(0x%llx): the block lies in an expandable segment "
        "(expandable_segments:True), which cuIpcGetMemHandle cannot export as one allocation; "
        "refused with "
        "CUDA_ERROR_INVALID_VALUE (set expandable_segments:False, or CUDAPOOL_DISABLE=1, to "
        "share such memory)",
        static_cast<unsigned long long>(dptr));
  }
  return CUDA_ERROR_INVALID_VALUE;
}
