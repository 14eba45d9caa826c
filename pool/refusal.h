// SPDX-License-Identifier: Apache-2.0
// pool/refusal.h: a request that failed because the device refused one of the pool's requests
// with an error other than out-of-memory (AllocStatus::kBackendError): which request (a segment,
// an expandable segment's address range or pages), its size, and the error; and the one-line
// explanation the shim prints for it, so that such a failure is never silent. The pool records it
// (DevicePool::last_refusal) and emits an alloc_failed event. Plain data and text; no I/O, no
// CUDA (the shim passes the error's name). Not here: out-of-memory (oom.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cudapool::pool {

enum class RefusalStep : std::uint8_t {
  kSegment,       // a new segment (cuMemAlloc in the shim)
  kAddressRange,  // an expandable segment's address range (cuMemAddressReserve)
  kPages,         // pages of an expandable segment (cuMemCreate, cuMemMap, cuMemSetAccess)
};

struct DeviceRefusal {
  std::uint64_t requested = 0;  // bytes the program asked for
  std::uint64_t rounded = 0;    // the block size the pool rounded it to
  RefusalStep step = RefusalStep::kSegment;
  std::uint64_t bytes = 0;      // what the pool asked the device for
  std::uint64_t page_size = 0;  // the expandable segment's page (address range, pages); else 0
  // The page is large_segment_size_mb's (the large pool of expandable segments).
  bool large_segment_page = false;
  int error = 0;  // the backend's code (a CUresult in the shim)
};

// One line starting with "cudapool: " and ending in a newline: what the device refused, with
// which error, and what the program gets. error_name: the error's name ("" when unknown).
std::string explain_refusal(const DeviceRefusal& refusal, int device, std::string_view error_name);

}  // namespace cudapool::pool
