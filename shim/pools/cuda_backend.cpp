// SPDX-License-Identifier: Apache-2.0
// shim/pools/cuda_backend.cpp: see cuda_backend.h.
#include "shim/pools/cuda_backend.h"

#include <time.h>
#include <algorithm>

#include <optional>
#include <utility>

#include "shim/driver/real_driver.h"
#include "shim/pools/context_scope.h"
#include "shim/pools/stream_capture.h"
#include "shim/support/diagnostics.h"

namespace cudapool::shim {

namespace {

pool::BackendResult from_cuda(CUresult r) {
  if (r == CUDA_SUCCESS) return pool::BackendResult{};
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    return {pool::BackendStatus::kOutOfMemory, static_cast<int>(r)};
  return {pool::BackendStatus::kError, static_cast<int>(r)};
}

}  // namespace

namespace {

// Asked once more after a failure: the pool keeps the answer for its life (the memory fraction's
// cap, the size of an expandable segment's reservation), and 0 would make it refuse every
// allocation (found by tests/fakecuda/fault_sweep.sh).
std::size_t device_total_memory(CUdevice device) {
  for (int attempt = 0; attempt < 2 && real().cuDeviceTotalMem_v2 != nullptr; ++attempt) {
    size_t total = 0;
    if (real().cuDeviceTotalMem_v2(&total, device) == CUDA_SUCCESS) return total;
  }
  return 0;
}

}  // namespace

CudaBackend::CudaBackend(CUcontext context, CUdevice device, config::ReuseFence fence,
                         int pool_slot)
    : context_(context),
      device_(device),
      fence_(context, fence, pool_slot),
      total_memory_(device_total_memory(device)) {}

bool CudaBackend::free_memory(std::size_t* bytes) const {
  ContextScope scope(context_);
  size_t free = 0;
  size_t total = 0;
  if (real().cuMemGetInfo_v2 == nullptr || real().cuMemGetInfo_v2(&free, &total) != CUDA_SUCCESS) {
    return false;
  }
  *bytes = free;
  return true;
}

namespace {

// cuMemFree_v2 of one of the pool's cuMemAlloc segments, in the current context. A failure is
// said once; a context gone (at exit, or destroyed since an idle tick took the segment) is not one:
// the segment went with it.
void free_pool_segment(std::uintptr_t ptr) {
  const CUresult r = real().cuMemFree_v2(static_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED && r != CUDA_ERROR_INVALID_CONTEXT &&
      r != CUDA_ERROR_CONTEXT_IS_DESTROYED) {
    CUDAPOOL_WARN_ONCE("cuMemFree_v2 of a pool segment failed with error %d", static_cast<int>(r));
  }
}

// Sleeps `pause_us` at a time until done() holds, at most `limit_ms` in all; whether it holds.
// For the waits on the idle-release thread's give-back, off the hot path.
template <typename Done>
bool poll_until(Done done, long pause_us, long limit_ms) {
  for (long waited_us = 0; !done() && waited_us < limit_ms * 1000; waited_us += pause_us) {
    timespec pause{0, pause_us * 1000};
    nanosleep(&pause, nullptr);
  }
  return done();
}

}  // namespace

pool::BackendResult CudaBackend::allocate_segment(std::size_t bytes, std::uintptr_t* ptr) {
  ContextScope scope(context_);
  CUdeviceptr p = 0;
  CUresult r = real().cuMemAlloc_v2(&p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY && waited_for_give_back()) r = real().cuMemAlloc_v2(&p, bytes);
  if (r == CUDA_SUCCESS) {
    *ptr = static_cast<std::uintptr_t>(p);
    segments_[*ptr] = bytes;
  }
  return from_cuda(r);
}

void CudaBackend::free_segment(std::uintptr_t ptr, std::size_t bytes) {
  segments_.erase(ptr);
  if (defer_) {
    deferred_.calls.push_back({DeferredGiveBack::Kind::kSegment, ptr, bytes, 0});
    deferred_.bytes += bytes;
    return;
  }
  ContextScope scope(context_);
  free_pool_segment(ptr);
}

namespace {

// The (start, bytes) entry of a map of ranges that holds ptr, or nullptr.
const std::pair<const std::uintptr_t, std::size_t>* range_holding(
    const std::map<std::uintptr_t, std::size_t>& ranges, std::uintptr_t ptr) {
  auto it = ranges.upper_bound(ptr);
  if (it == ranges.begin()) return nullptr;
  --it;
  return ptr < it->first + it->second ? &*it : nullptr;
}

}  // namespace

bool CudaBackend::segment_containing(std::uintptr_t ptr, std::uintptr_t* base,
                                     std::size_t* size) const {
  const auto* range = range_holding(segments_, ptr);
  if (range == nullptr) return false;
  *base = range->first;
  *size = range->second;
  return true;
}

bool CudaBackend::in_address_reservation(std::uintptr_t ptr) const {
  return range_holding(reservations_, ptr) != nullptr;
}

pool::BackendResult CudaBackend::reserve_address_space(std::size_t bytes, std::uintptr_t* ptr) {
  ContextScope scope(context_);
  CUdeviceptr p = 0;
  const CUresult r = real().cuMemAddressReserve(&p, bytes, 0, 0, 0);
  if (r == CUDA_SUCCESS) {
    *ptr = static_cast<std::uintptr_t>(p);
    reservations_[*ptr] = bytes;
  }
  return from_cuda(r);
}

void CudaBackend::release_address_space(std::uintptr_t ptr, std::size_t bytes) {
  if (defer_) {
    reservations_.erase(ptr);
    deferred_.calls.push_back({DeferredGiveBack::Kind::kAddressRange, ptr, bytes, 0});
    return;
  }
  ContextScope scope(context_);
  real().cuMemAddressFree(static_cast<CUdeviceptr>(ptr), bytes);
  reservations_.erase(ptr);
}

pool::BackendResult CudaBackend::map_pages(std::uintptr_t ptr, std::size_t bytes,
                                           std::size_t handle_size) {
  wait_for_unmapping(ptr, bytes);
  const pool::BackendResult first = map_pages_once(ptr, bytes, handle_size);
  if (first.status != pool::BackendStatus::kOutOfMemory || !waited_for_give_back()) return first;
  return map_pages_once(ptr, bytes, handle_size);
}

pool::BackendResult CudaBackend::map_pages_once(std::uintptr_t ptr, std::size_t bytes,
                                                std::size_t handle_size) {
  ContextScope scope(context_);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<std::uintptr_t> done;
  CUresult r = CUDA_SUCCESS;
  for (std::uintptr_t p = ptr; p < ptr + bytes; p += handle_size) {
    const std::size_t size = std::min(handle_size, ptr + bytes - p);  // the last may be smaller
    CUmemGenericAllocationHandle handle = 0;
    r = real().cuMemCreate(&handle, size, &prop, 0);
    if (r != CUDA_SUCCESS) break;
    r = real().cuMemMap(static_cast<CUdeviceptr>(p), size, 0, handle, 0);
    if (r != CUDA_SUCCESS) {
      real().cuMemRelease(handle);
      break;
    }
    r = real().cuMemSetAccess(static_cast<CUdeviceptr>(p), size, &access, 1);
    pages_[p] = Page{handle, size};
    done.push_back(p);
    if (r != CUDA_SUCCESS) break;
  }
  if (r != CUDA_SUCCESS) {  // all or nothing
    for (std::uintptr_t p : done) {
      real().cuMemUnmap(static_cast<CUdeviceptr>(p), pages_[p].size);
      real().cuMemRelease(pages_[p].handle);
      pages_.erase(p);
    }
  }
  return from_cuda(r);
}

void CudaBackend::unmap_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t page_size) {
  ContextScope scope(context_);
  // Unmapping does not wait for the device as cuMemFree does.
  if (!defer_ && captures_in_progress().load(std::memory_order_relaxed) == 0) {
    real().cuCtxSynchronize();
  }
  // Handle by handle, each as large as map_pages made it (a multiple of page_size).
  for (std::uintptr_t p = ptr; p < ptr + bytes;) {
    auto it = pages_.find(p);
    if (it == pages_.end()) {
      p += page_size;
      continue;
    }
    const Page page = it->second;
    if (defer_) {  // unmapped and released by give_back(); map_pages waits for it there
      deferred_.calls.push_back({DeferredGiveBack::Kind::kHandle, p, page.size, page.handle});
      deferred_.bytes += page.size;
    } else {
      real().cuMemUnmap(static_cast<CUdeviceptr>(p), page.size);
      real().cuMemRelease(page.handle);
    }
    pages_.erase(it);
    p += page.size;
  }
}

void CudaBackend::wait_for_unmapping(std::uintptr_t ptr, std::size_t bytes) {
  if (unmapping_.empty()) return;
  if (!unmapping_done_.load(std::memory_order_acquire)) {
    const bool overlaps = std::any_of(unmapping_.begin(), unmapping_.end(), [&](const auto& r) {
      return r.first < ptr + bytes && ptr < r.first + r.second;
    });
    if (!overlaps) return;  // other addresses: no need to wait
    if (!poll_until([&] { return unmapping_done_.load(std::memory_order_acquire); }, 50, 5000)) {
      CUDAPOOL_WARN_ONCE("the idle-release thread's cuMemUnmap took more than 5 s");
      return;  // the list stays: its addresses are still mapped
    }
  }
  unmapping_.clear();
}

CudaBackend::DeferredGiveBacks CudaBackend::end_deferred_give_back() {
  defer_ = false;
  giving_back_.fetch_add(deferred_.bytes, std::memory_order_relaxed);
  unmapping_.clear();
  for (const DeferredGiveBack& g : deferred_.calls) {
    if (g.kind == DeferredGiveBack::Kind::kHandle) unmapping_.emplace_back(g.ptr, g.bytes);
  }
  unmapping_done_.store(unmapping_.empty(), std::memory_order_relaxed);
  DeferredGiveBacks list;
  std::swap(list, deferred_);
  return list;
}

void CudaBackend::give_back(CUcontext context, const DeferredGiveBacks& list) {
  bool any_segment = false;
  for (const DeferredGiveBack& g : list.calls) {
    any_segment |= g.kind == DeferredGiveBack::Kind::kSegment;
  }
  std::optional<ContextScope> scope;  // cuMemFree_v2 needs the context; the others none
  if (any_segment) scope.emplace(context);
  for (const DeferredGiveBack& g : list.calls) {
    switch (g.kind) {
      case DeferredGiveBack::Kind::kSegment:
        free_pool_segment(g.ptr);
        break;
      case DeferredGiveBack::Kind::kHandle:
        real().cuMemUnmap(static_cast<CUdeviceptr>(g.ptr), g.bytes);
        real().cuMemRelease(g.handle);
        break;
      case DeferredGiveBack::Kind::kAddressRange:
        real().cuMemAddressFree(static_cast<CUdeviceptr>(g.ptr), g.bytes);
        break;
    }
  }
  unmapping_done_.store(true, std::memory_order_release);
  giving_back_.fetch_sub(list.bytes, std::memory_order_release);
}

bool CudaBackend::waited_for_give_back() {
  if (giving_back_.load(std::memory_order_acquire) == 0) return false;
  poll_until([&] { return giving_back_.load(std::memory_order_acquire) == 0; }, 100, 2000);
  return true;
}

void CudaBackend::release_after_context_gone() {
  // No context is made current: this one is gone. The virtual memory calls need none.
  for (const auto& [p, page] : pages_) {
    real().cuMemUnmap(static_cast<CUdeviceptr>(p), page.size);
    real().cuMemRelease(page.handle);
  }
  pages_.clear();
  for (const auto& [p, bytes] : reservations_)
    real().cuMemAddressFree(static_cast<CUdeviceptr>(p), bytes);
  reservations_.clear();
  // The rest named things of the dead context (its cuMemAlloc segments, streams and events).
  segments_.clear();
  fence_.forget_all();
}

void CudaBackend::reuse_for(CUcontext context, CUdevice device) {
  context_ = context;
  device_ = device;
  total_memory_ = device_total_memory(device);
  segments_.clear();  // empty since release_after_context_gone, as are the others
  pages_.clear();
  reservations_.clear();
  fence_.reuse_for(context);
}

// --- reuse fences: reuse_fence.h --------------------------------------------------------------

std::uint64_t CudaBackend::fence_after_free(std::uintptr_t, std::size_t, std::uintptr_t) {
  return fence_.ticket_for_free();
}

bool CudaBackend::fence_passed(std::uint64_t fence) {
  return fence_.passed(fence);
}

bool CudaBackend::fence_wait(std::uint64_t fence) {
  return fence_.wait(fence, ReuseFence::kForever);
}

bool CudaBackend::fence_wait_for(std::uint64_t fence, std::uint64_t budget_ns) {
  return fence_.wait(fence, budget_ns);
}

}  // namespace cudapool::shim
