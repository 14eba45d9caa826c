// shim/stream_work.h: whether any work went to a stream other than the legacy default stream since
// reuse_fence:auto last recorded its legacy-stream barrier. The hooks of every driver entry point
// that puts work on a stream (stream_work_hooks.cpp, generated list) note it; while nothing but the
// legacy stream was used, work before a free is already ordered before any later work on the
// legacy, blocking and per-thread streams, and the barrier is skipped.
#pragma once

#include <atomic>

#include "shim/cuda_api.h"

namespace cudapool::shim {

inline std::atomic<bool> g_side_stream_work{true};  // true until the first barrier
// Set for good at the first work on a stream other than the legacy one, or the first non-blocking
// stream: from then on freed blocks may need reuse fences (thread caches stop caching).
inline std::atomic<bool> g_streams_beyond_legacy{false};

inline void note_streams_beyond_legacy() {
  if (!g_streams_beyond_legacy.load(std::memory_order_relaxed)) {
    g_streams_beyond_legacy.store(true, std::memory_order_release);
  }
}

// stream as passed to a driver entry point; per_thread_variant for the `_ptsz`/`_ptds` symbols,
// where stream 0 means the calling thread's per-thread default stream.
inline void note_stream_work(CUstream stream, bool per_thread_variant) {
  const bool legacy = stream == CU_STREAM_LEGACY || (stream == nullptr && !per_thread_variant);
  if (legacy) return;
  if (!g_side_stream_work.load(std::memory_order_relaxed)) {
    g_side_stream_work.store(true, std::memory_order_release);
  }
  note_streams_beyond_legacy();
}

// Clears the note and returns whether it was set (call before recording a barrier).
inline bool take_side_stream_work() {
  return g_side_stream_work.exchange(false, std::memory_order_acq_rel);
}

// The stream-work hook standing for a real driver function, or nullptr.
void* stream_work_hook_for(void* real_function);

}  // namespace cudapool::shim
