// SPDX-License-Identifier: Apache-2.0
// tools/tune/outcome.h: what one setting's replay of one log comes to, as cudapool tune ranks it
// (bytes and counts summed over the log's devices). Made by a pass (pass.h), ranked by tune.h,
// weighed for idle release by idle.h, printed by tune_report.h. Not the pool's statistics
// themselves (pool/stats.def).
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
  std::uint64_t memory_limit = 0;   // what its pool may reserve: device_memory, or the fraction's
  // Segments given back because the device (or the fraction's cap) was full: with
  // max_split_size, the cached oversize blocks that release_available_cached_blocks frees before
  // asking again, which num_alloc_retries does not count (PyTorch counts only the flush of the
  // whole cache). num_device_free where nothing else gives segments back (no flush:
  // num_sync_all_streams 0, which a retry and an empty_cache make 1 or more; no garbage
  // collection, no idle release that gave memory back); 0 otherwise, not known then
  // (tune_report.h: the note on such rows).
  std::uint64_t oversize_releases = 0;
  // Memory held over time (tools/replay/replayer.h HeldOverTime), for idle release (idle.h): the
  // time-weighted mean of reserved bytes over the log's span (its events' t_ns, first to last;
  // the reserved bytes at the end when the span is 0), and the span.
  double mean_reserved = 0.0;
  std::uint64_t span_ns = 0;
  // reserved_bytes.all.allocated: every byte taken from the device over the run (segments and
  // page mappings, those made again after a release included).
  std::uint64_t mapped_bytes = 0;
  // The idle clock's ticks (the log's or simulated) that gave memory back, and what they gave.
  std::uint64_t idle_releases = 0;
  std::uint64_t idle_released_bytes = 0;

  bool operator==(const Outcome&) const = default;
};

}  // namespace cudapool::tune
