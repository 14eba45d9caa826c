// shim/cuda_backend.cpp: see cuda_backend.h. Reuse fences, reuse_fence:auto: frees are grouped in
// epochs. The epoch closes when the pool wants one of its blocks back: the shim then records one
// event on the legacy default stream (a barrier: it waits for earlier work on every blocking stream
// and every per-thread default stream, and later work on them waits for it) and one on each
// non-blocking stream of the context. Without non-blocking streams the blocks are safe as soon as
// the barrier is enqueued; with them, once all the epoch's events have completed. Nothing is
// recorded while a stream capture is in progress (the blocks wait).
#include "shim/cuda_backend.h"

#include <algorithm>

#include "shim/pools.h"
#include "shim/real_driver.h"
#include "shim/runtime.h"
#include "shim/stream_work.h"

namespace cudapool::shim {

namespace {

// Makes ctx current for the scope when it is not (segment calls may come from another thread's
// free).
class ContextScope {
 public:
  explicit ContextScope(CUcontext ctx) {
    CUcontext current = nullptr;
    real().cuCtxGetCurrent(&current);
    if (current != ctx && real().cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) pushed_ = true;
  }
  ~ContextScope() {
    if (pushed_) {
      CUcontext ignored = nullptr;
      real().cuCtxPopCurrent_v2(&ignored);
    }
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_ = false;
};

pool::BackendResult from_cuda(CUresult r) {
  if (r == CUDA_SUCCESS) return pool::BackendResult{};
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    return {pool::BackendStatus::kOutOfMemory, static_cast<int>(r)};
  return {pool::BackendStatus::kError, static_cast<int>(r)};
}

}  // namespace

CudaBackend::CudaBackend(CUcontext context, CUdevice device, config::ReuseFence fence)
    : context_(context), device_(device), fence_mode_(fence) {
  size_t total = 0;
  if (real().cuDeviceTotalMem_v2 != nullptr &&
      real().cuDeviceTotalMem_v2(&total, device) == CUDA_SUCCESS) {
    total_memory_ = total;
  }
}

pool::BackendResult CudaBackend::allocate_segment(std::size_t bytes, std::uintptr_t* ptr) {
  ContextScope scope(context_);
  CUdeviceptr p = 0;
  const CUresult r = real().cuMemAlloc_v2(&p, bytes);
  if (r == CUDA_SUCCESS) {
    *ptr = static_cast<std::uintptr_t>(p);
    segments_[*ptr] = bytes;
  }
  return from_cuda(r);
}

void CudaBackend::free_segment(std::uintptr_t ptr, std::size_t bytes) {
  (void)bytes;
  segments_.erase(ptr);
  ContextScope scope(context_);
  const CUresult r = real().cuMemFree_v2(static_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) {
    CUDAPOOL_WARN_ONCE("cuMemFree_v2 of a pool segment failed with error %d", static_cast<int>(r));
  }
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
  ContextScope scope(context_);
  real().cuMemAddressFree(static_cast<CUdeviceptr>(ptr), bytes);
  reservations_.erase(ptr);
}

pool::BackendResult CudaBackend::map_pages(std::uintptr_t ptr, std::size_t bytes,
                                           std::size_t page_size) {
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
  for (std::uintptr_t p = ptr; p < ptr + bytes; p += page_size) {
    CUmemGenericAllocationHandle handle = 0;
    r = real().cuMemCreate(&handle, page_size, &prop, 0);
    if (r != CUDA_SUCCESS) break;
    r = real().cuMemMap(static_cast<CUdeviceptr>(p), page_size, 0, handle, 0);
    if (r != CUDA_SUCCESS) {
      real().cuMemRelease(handle);
      break;
    }
    r = real().cuMemSetAccess(static_cast<CUdeviceptr>(p), page_size, &access, 1);
    pages_[p] = Page{handle, page_size};
    done.push_back(p);
    if (r != CUDA_SUCCESS) break;
  }
  if (r != CUDA_SUCCESS) {  // all or nothing
    for (std::uintptr_t p : done) {
      real().cuMemUnmap(static_cast<CUdeviceptr>(p), page_size);
      real().cuMemRelease(pages_[p].handle);
      pages_.erase(p);
    }
  }
  return from_cuda(r);
}

void CudaBackend::unmap_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t page_size) {
  ContextScope scope(context_);
  // Unmapping does not wait for the device as cuMemFree does.
  if (captures_in_progress().load(std::memory_order_relaxed) == 0) real().cuCtxSynchronize();
  for (std::uintptr_t p = ptr; p < ptr + bytes; p += page_size) {
    auto it = pages_.find(p);
    if (it == pages_.end()) continue;
    real().cuMemUnmap(static_cast<CUdeviceptr>(p), page_size);
    real().cuMemRelease(it->second.handle);
    pages_.erase(it);
  }
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
  nonblocking_streams_ = {};
  epochs_ = {};
  spare_events_ = {};
}

// --- reuse fences ------------------------------------------------------------------------------

void CudaBackend::add_nonblocking_stream(CUstream stream) {
  if (std::find(nonblocking_streams_.begin(), nonblocking_streams_.end(), stream) !=
      nonblocking_streams_.end()) {
    return;
  }
  nonblocking_streams_.push_back(stream);
  order_after_earlier_work(stream);
}

// A new non-blocking stream is not ordered after the legacy stream's work. Blocks freed while
// nothing but the legacy (and blocking, per-thread) streams had work needed no fence, and the
// program may now give one to the new stream while a kernel queued before its free still reads
// it: the stream waits for all work queued so far (an event on the legacy stream, which is also a
// barrier for the blocking and per-thread streams). The wait takes the event's state when it is
// made, so the event is a spare again at once. Not during a stream capture (no legacy-stream
// work may be enqueued then).
void CudaBackend::order_after_earlier_work(CUstream stream) {
  if (fence_mode_ != config::ReuseFence::kAuto ||
      captures_in_progress().load(std::memory_order_relaxed) != 0 ||
      real().cuStreamWaitEvent == nullptr) {
    return;
  }
  ContextScope scope(context_);
  CUevent barrier = take_event();
  if (barrier == nullptr) return;
  if (real().cuEventRecord(barrier, CU_STREAM_LEGACY) == CUDA_SUCCESS) {
    real().cuStreamWaitEvent(stream, barrier, 0);
  }
  spare_events_.push_back(barrier);
}

void CudaBackend::remove_stream(CUstream stream) {
  // A destroyed stream's work still completes; recorded events keep tracking it.
  nonblocking_streams_.erase(
      std::remove(nonblocking_streams_.begin(), nonblocking_streams_.end(), stream),
      nonblocking_streams_.end());
}

std::uint64_t CudaBackend::fence_after_free(std::uintptr_t, std::size_t, std::uintptr_t) {
  const bool capturing = captures_in_progress().load(std::memory_order_relaxed) != 0;
  if (fence_mode_ == config::ReuseFence::kNone) return 0;
  if (fence_mode_ == config::ReuseFence::kSync && !capturing) {
    // What the driver's own cuMemFree does: wait for the whole device.
    ContextScope scope(context_);
    real().cuCtxSynchronize();
    return 0;
  }
  // Nothing but the legacy stream had work since the last barrier: the block is already safe for
  // any later work (see close_epoch) and needs no fence at all.
  if (nonblocking_streams_.empty() && pool_count() == 1 &&
      !g_side_stream_work.load(std::memory_order_acquire)) {
    return 0;
  }
  if (epochs_.empty() || epochs_.back().closed) {
    epochs_.push_back(Epoch{});
    epochs_.back().id = next_epoch_++;
  }
  ++epochs_.back().users;
  return epochs_.back().id;
}

CudaBackend::Epoch* CudaBackend::find_epoch(std::uint64_t id) {
  for (Epoch& e : epochs_) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

CUevent CudaBackend::take_event() {
  if (!spare_events_.empty()) {
    CUevent e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  if (real().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
  return e;
}

void CudaBackend::recycle_events(Epoch& epoch) {
  for (CUevent e : epoch.events) spare_events_.push_back(e);
  epoch.events.clear();
}

bool CudaBackend::close_epoch(Epoch& epoch) {
  if (epoch.closed) return true;
  if (captures_in_progress().load(std::memory_order_relaxed) != 0) return false;
  // Only the legacy stream had work since the last barrier (and there is one context and no
  // non-blocking stream): the work before the frees is already ordered before any later work on
  // the legacy, blocking and per-thread streams, as the last barrier orders what came before it.
  if (nonblocking_streams_.empty() && pool_count() == 1 && !take_side_stream_work()) {
    epoch.closed = true;
    return true;
  }
  ContextScope scope(context_);
  // The barrier on the legacy stream orders the blocking and per-thread streams.
  CUevent barrier = take_event();
  if (barrier == nullptr || real().cuEventRecord(barrier, CU_STREAM_LEGACY) != CUDA_SUCCESS) {
    if (barrier != nullptr) spare_events_.push_back(barrier);
    return false;
  }
  if (nonblocking_streams_.empty()) {
    spare_events_.push_back(barrier);  // enqueued: that alone orders later work
  } else {
    // Non-blocking streams are not ordered by it: wait for the barrier and for their work.
    epoch.events.push_back(barrier);
    for (CUstream s : nonblocking_streams_) {
      CUevent e = take_event();
      if (e != nullptr && real().cuEventRecord(e, s) == CUDA_SUCCESS) {
        epoch.events.push_back(e);
      } else if (e != nullptr) {
        spare_events_.push_back(e);
      }
    }
  }
  epoch.closed = true;
  return true;
}

bool CudaBackend::fence_passed(std::uint64_t fence) {
  Epoch* epoch = find_epoch(fence);
  if (epoch == nullptr) return true;
  if (!close_epoch(*epoch)) return false;
  while (!epoch->events.empty()) {
    const CUresult r = real().cuEventQuery(epoch->events.back());
    if (r == CUDA_ERROR_NOT_READY) return false;
    spare_events_.push_back(epoch->events.back());  // done (or broken: nothing to wait for)
    epoch->events.pop_back();
  }
  return true;
}

bool CudaBackend::fence_wait(std::uint64_t fence) {
  Epoch* epoch = find_epoch(fence);
  if (epoch == nullptr) return true;
  // During a stream capture nothing may be recorded or waited on: the block stays fenced.
  if (!close_epoch(*epoch)) return false;
  for (CUevent e : epoch->events) real().cuEventSynchronize(e);
  recycle_events(*epoch);
  return true;
}

void CudaBackend::fence_release(std::uint64_t fence) {
  Epoch* epoch = find_epoch(fence);
  if (epoch == nullptr) return;
  if (--epoch->users > 0) return;
  if (!epoch->closed) return;  // still open: more frees may join it
  recycle_events(*epoch);
  epochs_.erase(epochs_.begin() + (epoch - epochs_.data()));
}

}  // namespace cudapool::shim
