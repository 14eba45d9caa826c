// SPDX-License-Identifier: Apache-2.0
// pool/backend.h: what the pool needs from a device, and nothing more. The shim implements it with
// the CUDA driver; SimulatedBackend implements it with fake addresses for tests and replay. The
// pool never calls CUDA itself.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cudapool::pool {

// Outcome of a backend call that can fail. kOutOfMemory makes the pool free cached memory and
// retry; any other failure is passed to the caller unchanged (error holds the backend's own code).
enum class BackendStatus : std::uint8_t { kOk, kOutOfMemory, kError };

struct BackendResult {
  BackendStatus status = BackendStatus::kOk;
  int error = 0;  // backend-specific code when status is kError (a CUresult in the shim)
  bool ok() const { return status == BackendStatus::kOk; }
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Total device memory in bytes: the base of per_process_memory_fraction.
  virtual std::size_t total_memory() const = 0;
  // Free device memory in bytes as the device sees it (asked only to explain an out-of-memory);
  // false when unknown.
  virtual bool free_memory(std::size_t* /*bytes*/) const { return false; }

  // A new segment of `bytes` (a multiple of 2 MiB) for the pool; *ptr is its base address.
  virtual BackendResult allocate_segment(std::size_t bytes, std::uintptr_t* ptr) = 0;
  // Gives a whole segment back to the device.
  virtual void free_segment(std::uintptr_t ptr, std::size_t bytes) = 0;

  // Expandable segments: address space is reserved once, then backed page by page.
  virtual BackendResult reserve_address_space(std::size_t bytes, std::uintptr_t* ptr) = 0;
  virtual void release_address_space(std::uintptr_t ptr, std::size_t bytes) = 0;
  // Backs [ptr, ptr + bytes) with new device allocations (handles) of handle_size bytes each, the
  // last one smaller when bytes is not a multiple of it; all or nothing.
  virtual BackendResult map_pages(std::uintptr_t ptr, std::size_t bytes,
                                  std::size_t handle_size) = 0;
  // Unbacks [ptr, ptr + bytes), after the device is done with it. The range holds whole handles
  // made by map_pages, each a multiple of page_size (the pool's page) in size.
  virtual void unmap_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t page_size) = 0;

  // Reuse fences. When a block is freed the backend may return a nonzero fence: the block is then
  // not handed out again until fence_passed() (polled, never blocking) or fence_wait() (blocking,
  // used when memory is short; false when it cannot wait now, e.g. during a stream capture) says
  // the device is done with it. Each fence is released once, after it passed.
  virtual std::uint64_t fence_after_free(std::uintptr_t /*ptr*/, std::size_t /*size*/,
                                         std::uintptr_t /*stream*/) {
    return 0;
  }
  virtual bool fence_passed(std::uint64_t /*fence*/) { return true; }
  virtual bool fence_wait(std::uint64_t /*fence*/) { return true; }
  // Waits at most budget_ns for the fence to pass (asked before the pool would grow by a segment
  // that fenced blocks could have spared); false when it did not pass in time. A backend that
  // cannot wait answers as fence_passed() does.
  virtual bool fence_wait_for(std::uint64_t fence, std::uint64_t /*budget_ns*/) {
    return fence_passed(fence);
  }
  virtual void fence_release(std::uint64_t /*fence*/) {}
};

}  // namespace cudapool::pool
