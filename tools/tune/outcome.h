// tools/tune/outcome.h: what one setting's replay of one log comes to, as cudapool tune ranks it
// (bytes and counts summed over the log's devices). Made by a pass (pass.h), ranked by tune.h.
#pragma once

#include <cstdint>

namespace cudapool::tune {

struct Outcome {
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_allocated = 0;
  std::uint64_t device_allocs = 0;  // segment allocations and page mappings: cudaMalloc calls
  std::uint64_t device_frees = 0;
  std::uint64_t retries = 0;        // num_alloc_retries: allocations that freed the cache first
  std::uint64_t ooms = 0;           // requests that failed for lack of memory
  std::uint64_t problems = 0;       // lines the replay could not apply (the same for every setting)
  std::uint64_t device_memory = 0;  // of device 0 (or the first), as simulated

  bool operator==(const Outcome&) const = default;
};

}  // namespace cudapool::tune
