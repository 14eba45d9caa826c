// SPDX-License-Identifier: Apache-2.0
// config/options.h: the plain settings the pool and the shim read, with PyTorch 2.11's defaults.
// This is data only: no parsing (config/parse.h), no environment access, no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace cudapool::config {

inline constexpr std::size_t kMiB = 1024 * 1024;
// PyTorch's roundup_power2_divisions table: one entry per power-of-two interval from 1 MiB
// ([0,2) MiB, [2,4) MiB, ...) up to 64 GiB; the last entry also covers everything above.
inline constexpr std::size_t kRoundupIntervals = 16;

enum class ReuseFence : std::uint8_t { kAuto, kSync, kNone };
// Per-thread caches of freed blocks in the shim: auto turns them on for a pool once its lock is
// contended (docs/shim.md, "Thread caches").
enum class ThreadCacheMode : std::uint8_t { kAuto, kAlways, kNever };

struct Options {
  // Blocks at or above this size are never split (PyTorch max_split_size_mb). Unlimited by default.
  std::size_t max_split_size = std::numeric_limits<std::size_t>::max();
  // An oversize request may take a cached block smaller than request + this
  // (max_non_split_rounding_mb).
  std::size_t max_non_split_rounding = 20 * kMiB;
  // Divisions per power-of-two interval; 0 or 1 means plain 512-byte rounding.
  std::array<std::size_t, kRoundupIntervals> roundup_power2_divisions{};
  // 0 disables; otherwise 0 < t < 1, active only with a memory fraction below 1.
  double garbage_collection_threshold = 0.0;
  bool expandable_segments = false;
  // Cap on reserved memory as a fraction of device memory; 1.0 means no cap.
  double per_process_memory_fraction = 1.0;
  bool release_lock_on_cudamalloc = false;
  // Size of the segments made for 1-10 MiB requests and the large-pool expandable page (PyTorch
  // large_segment_size_mb; 20 MiB unless the conf string names it).
  std::size_t large_segment_size = 20 * kMiB;

  // cudapool's own keys.
  ReuseFence reuse_fence = ReuseFence::kAuto;
  ThreadCacheMode thread_cache = ThreadCacheMode::kAuto;
  bool strict = false;  // a diagnostic makes the shim refuse to start instead of keeping defaults
  // Idle release (docs/pool-policy.md, "Idle release"): cached memory unused for this many
  // milliseconds goes back to the device (whole idle segments; with expandable segments, unused
  // pages); 0 turns it off. The pool keeps at least idle_release_floor bytes reserved.
  std::uint64_t idle_release_ms = 0;
  std::size_t idle_release_floor = 0;
  // With expandable segments, the large pool's pages are backed by driver allocations (cuMemCreate
  // handles) of up to this many bytes, whole pages each (expandable_handle_mb); 0: one handle per
  // page, as PyTorch. The segment still grows by whole pages (large_segment_size); memory goes
  // back only in whole handles.
  std::size_t expandable_handle = 0;

  bool operator==(const Options&) const = default;
};

}  // namespace cudapool::config
