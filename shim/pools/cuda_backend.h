// SPDX-License-Identifier: Apache-2.0
// shim/pools/cuda_backend.h: the pool's Backend over the real CUDA driver, for one context:
// segments (cuMemAlloc_v2/cuMemFree_v2), expandable segments
// (cuMemAddressReserve/cuMemCreate/cuMemMap), and the pool's side of the reuse fences
// (reuse_fence.h, which the threads' caches read too). Called with the owning pool's lock held. Not
// here: which pool a call belongs to (context_registry.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <vector>

#include "config/options.h"
#include "pool/backend.h"
#include "shim/driver/cuda_api.h"
#include "shim/pools/reuse_fence.h"

namespace cudapool::shim {

class CudaBackend final : public pool::Backend {
 public:
  CudaBackend(CUcontext context, CUdevice device, config::ReuseFence fence, int pool_slot);

  std::size_t total_memory() const override { return total_memory_; }
  bool free_memory(std::size_t* bytes) const override;
  pool::BackendResult allocate_segment(std::size_t bytes, std::uintptr_t* ptr) override;
  void free_segment(std::uintptr_t ptr, std::size_t bytes) override;
  pool::BackendResult reserve_address_space(std::size_t bytes, std::uintptr_t* ptr) override;
  void release_address_space(std::uintptr_t ptr, std::size_t bytes) override;
  pool::BackendResult map_pages(std::uintptr_t ptr, std::size_t bytes,
                                std::size_t handle_size) override;
  void unmap_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t page_size) override;

  std::uint64_t fence_after_free(std::uintptr_t ptr, std::size_t size,
                                 std::uintptr_t stream) override;
  bool fence_passed(std::uint64_t fence) override;
  bool fence_wait(std::uint64_t fence) override;
  bool fence_wait_for(std::uint64_t fence, std::uint64_t budget_ns) override;

  // After the context was destroyed or reset: gives back the expandable segments' pages and
  // address ranges, which the driver keeps past the context (measured on the H200: a
  // cudaDeviceReset left 1 GiB of cached pages allocated). cuMemAlloc segments went with the
  // context and are only forgotten, as are its streams and events. Makes no context current.
  void release_after_context_gone();
  // After release_after_context_gone, when the pool's object is made over for a new context
  // (context_registry.cpp): the backend now serves `context` on `device`; the reuse fences too.
  void reuse_for(CUcontext context, CUdevice device);

  // Giving memory back without the pool's lock, for the idle-release thread (idle_release.h),
  // around a tick it synchronized the context for: between begin_deferred_give_back() and
  // end_deferred_give_back() (both under the pool's lock), free_segment, unmap_pages and
  // release_address_space update the books at once and make no synchronization (the blocks were
  // freed before the thread's), but leave the slow driver calls (cuMemFree_v2, cuMemRelease,
  // cuMemAddressFree: up to 1 ms per GB on an H200, docs/benchmarks.md "Idle release") to
  // give_back(), which the thread calls after dropping the lock. cuMemUnmap goes with them (one
  // held the lock for about 10 ms a burst on the SAM loop, and every allocation of the program
  // waited behind it): the pool may map the same addresses again as soon as the lock is dropped,
  // so map_pages first waits for the give-back of addresses it overlaps. An allocation that finds
  // the device full while memory is on its way back waits for it (at most 2 s), then asks again.
  struct DeferredGiveBack {
    enum class Kind : std::uint8_t { kSegment, kHandle, kAddressRange };
    Kind kind = Kind::kSegment;
    std::uintptr_t ptr = 0;  // segment or address range
    std::size_t bytes = 0;
    CUmemGenericAllocationHandle handle = 0;  // kHandle
  };
  struct DeferredGiveBacks {
    std::vector<DeferredGiveBack> calls;
    std::size_t bytes = 0;  // device memory they give back (address ranges hold none)
    bool empty() const { return calls.empty(); }
  };
  void begin_deferred_give_back() { defer_ = true; }
  DeferredGiveBacks end_deferred_give_back();
  // Makes the driver calls end_deferred_give_back() returned, in `context` (the pool's when the
  // list was taken); without the pool's lock.
  void give_back(CUcontext context, const DeferredGiveBacks& list);

  // Whether ptr lies in an address range reserved for an expandable segment.
  bool in_address_reservation(std::uintptr_t ptr) const;

  // The segment (base, size) holding ptr, if the pool owns it.
  bool segment_containing(std::uintptr_t ptr, std::uintptr_t* base, std::size_t* size) const;

  ReuseFence& fence() { return fence_; }
  const ReuseFence& fence() const { return fence_; }

  CUcontext context() const { return context_; }
  CUdevice device() const { return device_; }

 private:
  pool::BackendResult map_pages_once(std::uintptr_t ptr, std::size_t bytes,
                                     std::size_t handle_size);
  // When an allocation failed for lack of memory: waits (at most 2 s) for memory the idle-release
  // thread is giving back; whether there was any to wait for (then the caller asks again).
  bool waited_for_give_back();
  // Under the pool's lock, before mapping [ptr, ptr + bytes): waits (at most 5 s) for the
  // idle-release thread's cuMemUnmap of those addresses, when it has them still to unmap.
  void wait_for_unmapping(std::uintptr_t ptr, std::size_t bytes);

  bool defer_ = false;  // begin_deferred_give_back .. end_deferred_give_back
  DeferredGiveBacks deferred_;
  // The pages of the last deferred list (address, bytes), kept under the pool's lock until
  // give_back() says they are unmapped (unmapping_done_).
  std::vector<std::pair<std::uintptr_t, std::size_t>> unmapping_;
  std::atomic<bool> unmapping_done_{true};
  std::atomic<std::size_t> giving_back_{0};  // bytes taken by end_deferred_give_back, not yet given
  CUcontext context_;
  CUdevice device_;
  ReuseFence fence_;
  std::size_t total_memory_ = 0;
  std::map<std::uintptr_t, std::size_t> segments_;
  struct Page {
    CUmemGenericAllocationHandle handle = 0;
    std::size_t size = 0;
  };
  std::map<std::uintptr_t, Page> pages_;                // mapped pages of expandable segments
  std::map<std::uintptr_t, std::size_t> reservations_;  // their address ranges
};

}  // namespace cudapool::shim
