// SPDX-License-Identifier: Apache-2.0
// shim/pools/stream_capture.cpp: the bookkeeping of stream captures and the driver's rule for a
// potentially unsafe call during one (stream_capture.h). Not here: the hooks that report captures
// (interpose/hooks_streams.cpp), what each caller does while a capture is in progress.
#include "shim/pools/stream_capture.h"

#include "shim/driver/real_driver.h"

namespace cudapool::shim {

namespace {

// Captures begun in global mode, in the whole process.
std::atomic<int> g_global_captures{0};

// The captures the calling thread began in a mode other than relaxed (the driver requires such a
// capture to end on the thread that began it). Beyond kOwnCaptures at once a capture is not
// recorded: the rule then misses it (no program is known to hold that many).
struct OwnCapture {
  CUstream stream;
  CUstreamCaptureMode mode;
};
constexpr int kOwnCaptures = 16;
thread_local OwnCapture t_own[kOwnCaptures];
thread_local int t_own_count = 0;

void decrement(std::atomic<int>& n) {
  int v = n.load(std::memory_order_relaxed);
  while (v > 0 && !n.compare_exchange_weak(v, v - 1)) {
  }
}

bool is_capture_refusal(CUresult r) {
  return r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
         r == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD || r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

}  // namespace

void note_capture_begun(CUstream stream, CUstreamCaptureMode mode) {
  captures_in_progress().fetch_add(1, std::memory_order_relaxed);
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) g_global_captures.fetch_add(1);
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED && t_own_count < kOwnCaptures) {
    t_own[t_own_count++] = {stream, mode};
  }
}

void note_capture_ended(CUstream stream) {
  decrement(captures_in_progress());
  for (int i = 0; i < t_own_count; ++i) {
    if (t_own[i].stream != stream) continue;
    if (t_own[i].mode == CU_STREAM_CAPTURE_MODE_GLOBAL) decrement(g_global_captures);
    t_own[i] = t_own[--t_own_count];
    return;
  }
  // A relaxed capture (it may end on any thread), or one not recorded: nothing more to take away.
  // A global one not recorded leaves g_global_captures high; the rule then asks the driver more
  // often than needed, which costs calls but never changes an answer.
}

CUresult capture_refusal_slow() {
  const RealDriver& d = real();
  if (d.cuThreadExchangeStreamCaptureMode == nullptr) return CUDA_SUCCESS;
  // The thread's interaction mode: swapped for relaxed, read, and put back.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (d.cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS) return CUDA_SUCCESS;
  CUstreamCaptureMode restore = mode;
  d.cuThreadExchangeStreamCaptureMode(&restore);
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  int own_global = 0;
  for (int i = 0; i < t_own_count; ++i)
    own_global += t_own[i].mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
  const bool forbidden =
      t_own_count > 0 || (mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                          g_global_captures.load(std::memory_order_relaxed) > own_global);
  if (!forbidden) return CUDA_SUCCESS;
  // The driver's own answer, so that the program hears what it would have heard and the capture
  // is left as the program's call would have left it.
  CUdeviceptr probe = 0;
  const CUresult r = d.cuMemAlloc_v2(&probe, 1);
  if (r == CUDA_SUCCESS) {
    d.cuMemFree_v2(probe);
    return CUDA_SUCCESS;
  }
  return is_capture_refusal(r) ? r : CUDA_SUCCESS;
}

}  // namespace cudapool::shim
