// SPDX-License-Identifier: Apache-2.0
// shim/interpose/stream_work.h: what the hooks of the driver entry points that put work on a stream
// (stream_work_hooks.cpp, generated list) tell the reuse fences (reuse_fence.h). Before the work
// is queued, a non-blocking stream that must be ordered after its pool's last barrier waits for
// it (usually nothing: one load and a compare). After the work was queued, the hook notes where it
// went: the legacy stream (only once a non-blocking stream exists: its earlier work is not ordered
// before such a stream), a blocking or per-thread stream (the pool's next close records a
// barrier), a non-blocking stream (its record counter). Each stream's first work is logged once
// (stream_first_work) when a log is written. With reuse_fence other than auto nothing is tracked.
#pragma once

#include <atomic>

#include "shim/driver/cuda_api.h"
#include "shim/pools/reuse_fence.h"
#include "shim/pools/stream_registry.h"

namespace cudapool::shim {

namespace detail {
void log_first_work(const StreamRef& ref, CUstream stream, const char* entry_point);
inline std::atomic<bool> g_per_thread_work_logged{false};
inline std::atomic<bool> g_unknown_work_logged{false};

inline void mark_all(std::atomic<std::uint64_t>& mask) {
  if (mask.load(std::memory_order_relaxed) != ~std::uint64_t{0}) {
    mask.store(~std::uint64_t{0}, std::memory_order_seq_cst);
  }
}
}  // namespace detail

// Before the work: where it goes, and the ordering a non-blocking stream may need first.
inline StreamRef stream_work_begins(CUstream stream, bool per_thread) {
  if (!g_track_streams.load(std::memory_order_relaxed)) return {StreamKind::kLegacy, nullptr};
  const StreamRef ref = classify_stream(stream, per_thread);
  if (ref.kind == StreamKind::kNonBlocking) {
    if (ReuseFence* f = ref.entry->fence.load(std::memory_order_acquire)) {
      f->order_before_work(*ref.entry, stream);
    }
  }
  return ref;
}

// After the work was queued (before the hook returns to the program).
inline void stream_work_queued(const StreamRef& ref, CUstream stream, const char* entry_point) {
  switch (ref.kind) {
    case StreamKind::kLegacy:
      if (g_nonblocking_seen.load(std::memory_order_relaxed)) detail::mark_all(g_legacy_work_mask);
      return;
    case StreamKind::kNonBlocking: {
      TrackedStream& s = *ref.entry;
      // Covered by the records made from now on.
      const std::uint64_t need = s.records.load(std::memory_order_seq_cst) + 1;
      std::uint64_t seen = s.need_record.load(std::memory_order_relaxed);
      while (seen < need &&
             !s.need_record.compare_exchange_weak(seen, need, std::memory_order_seq_cst)) {
      }
      if (ReuseFence* f = s.fence.load(std::memory_order_acquire)) f->note_nonblocking_work();
      if (!s.first_work_logged.load(std::memory_order_relaxed)) {
        detail::log_first_work(ref, stream, entry_point);
      }
      return;
    }
    case StreamKind::kBlocking:
      detail::mark_all(g_side_work_mask);
      if (!ref.entry->first_work_logged.load(std::memory_order_relaxed)) {
        detail::log_first_work(ref, stream, entry_point);
      }
      return;
    case StreamKind::kPerThread:
      detail::mark_all(g_side_work_mask);
      if (!detail::g_per_thread_work_logged.load(std::memory_order_relaxed)) {
        detail::log_first_work(ref, stream, entry_point);
      }
      return;
    case StreamKind::kUnknown:
      detail::mark_all(g_side_work_mask);
      if (!detail::g_unknown_work_logged.load(std::memory_order_relaxed)) {
        detail::log_first_work(ref, stream, entry_point);
      }
      return;
  }
}

// The stream-work hook standing for a real driver function, or nullptr.
void* stream_work_hook_for(void* real_function);

}  // namespace cudapool::shim
