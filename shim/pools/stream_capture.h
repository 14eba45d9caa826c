// SPDX-License-Identifier: Apache-2.0
// shim/pools/stream_capture.h: the stream captures in progress in the process, and the driver's
// rule for allocating and freeing while one is. The capture hooks (hooks_streams.cpp) report each
// capture begun and ended: how many are in progress (while one is, the shim makes no driver call
// that could invalidate it: the backend's cuCtxSynchronize before unmapping pages, the reuse
// fences' synchronizations, records and waits, the event hooks' bookkeeping, the idle release),
// how many were begun in global mode, and, per thread, the captures the thread began in a mode
// other than relaxed. From these and the thread's interaction mode, capture_refusal() tells
// whether the driver would refuse a cuMemAlloc_v2 or cuMemFree_v2 now
// (cuThreadExchangeStreamCaptureMode in cuda.h states the rule); the pooled hooks then refuse too,
// as the driver would have, instead of serving from the cache what the program's capture forbids.
// Not here: which stream is captured beyond the thread's own (the driver knows), the streams the
// fences follow (stream_registry.h).
#pragma once

#include <atomic>

#include "shim/driver/cuda_api.h"

namespace cudapool::shim {

inline std::atomic<int> g_captures_in_progress{0};

inline std::atomic<int>& captures_in_progress() {
  return g_captures_in_progress;
}

// A capture of `stream` begun in `mode` by the calling thread; a capture of `stream` ended (by
// cuStreamEndCapture's success or its report that the capture was invalidated).
void note_capture_begun(CUstream stream, CUstreamCaptureMode mode);
void note_capture_ended(CUstream stream);

// CUDA_SUCCESS when the driver would let the calling thread allocate or free now; else the
// driver's own refusal (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, with the capture invalidated, as
// the program's call would have left it): when the rule says it is forbidden, the driver is asked
// with a one-byte cuMemAlloc_v2 (given back at once should the driver allow it after all). One
// relaxed load while no capture is in progress.
CUresult capture_refusal_slow();
inline CUresult capture_refusal() {
  if (captures_in_progress().load(std::memory_order_relaxed) == 0) [[likely]]
    return CUDA_SUCCESS;
  return capture_refusal_slow();
}

}  // namespace cudapool::shim
