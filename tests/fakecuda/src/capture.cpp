// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/capture.cpp: stream capture as the driver's documentation states its rules
// (cuThreadExchangeStreamCaptureMode in cuda.h). A capture begun on a created stream records its
// mode and thread; while it lasts, a potentially unsafe call (here cuMemAlloc_v2, cuMemFree_v2 and
// cuCtxSynchronize, which call capture_allows_unsafe_call) is refused with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the captures that forbid it when the
// calling thread's interaction mode is
//   global: the thread has a capture begun in a mode other than relaxed, or another thread has
//           one begun in global mode;
//   thread_local: the thread has a capture begun in a mode other than relaxed;
//   relaxed: never.
// cuStreamEndCapture then ends an invalidated capture with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
// and no graph. Not modelled: graphs themselves (a graph is an opaque handle; nothing is
// recorded into it and work on a capturing stream runs at once), capture dependencies, and which
// other calls the driver counts as unsafe. Whether the real driver invalidates another thread's
// capture is what tests/gpu/capture_rules.cpp shows; the fake does.
#include <unistd.h>

#include "exports.h"
#include "state.h"

using namespace fakecuda;

namespace {

thread_local CUstreamCaptureMode t_interaction = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool valid_mode(CUstreamCaptureMode mode) {
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
         mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

CUresult begin_capture(CUstream handle, CUstreamCaptureMode mode) {
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(handle, &rc);
  if (s == nullptr) return rc;
  if (!valid_mode(mode)) return CUDA_ERROR_INVALID_VALUE;
  if (s->is_default) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream
  if (s->capture != CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  s->capture_mode = mode;
  s->capture_thread = ::gettid();
  return CUDA_SUCCESS;
}

// Into an existing graph: the graph is not looked at (graphs are not modelled).
CUresult begin_capture_to_graph(CUstream handle, CUgraph graph, CUstreamCaptureMode mode) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(handle, mode);
}

CUresult end_capture(CUstream handle, CUgraph* graph) {
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(handle, &rc);
  if (s == nullptr) return rc;
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_ERROR_ILLEGAL_STATE;
  if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED && s->capture_thread != ::gettid())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  const bool invalidated = s->capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  s->capture = CU_STREAM_CAPTURE_STATUS_NONE;
  s->capture_thread = 0;
  if (invalidated) {
    *graph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *graph = reinterpret_cast<CUgraph>(new int(0));  // an opaque handle; cuGraphDestroy frees it
  return CUDA_SUCCESS;
}

}  // namespace

CUresult fakecuda::capture_allows_unsafe_call() {
  if (t_interaction == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const pid_t me = ::gettid();
  bool forbidden = false;
  for (Stream* s : S().streams) {
    if (s->capture == CU_STREAM_CAPTURE_STATUS_NONE ||
        s->capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
      continue;
    const bool own = s->capture_thread == me;
    if (own || (t_interaction == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
      s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
      forbidden = true;
    }
  }
  return forbidden ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  FAKECUDA_ENTRY("cuThreadExchangeStreamCaptureMode");
  if (mode == nullptr || !valid_mode(*mode)) return CUDA_ERROR_INVALID_VALUE;
  const CUstreamCaptureMode old = t_interaction;
  t_interaction = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  FAKECUDA_ENTRY("cuStreamBeginCapture_v2");
  return begin_capture(hStream, mode);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  FAKECUDA_ENTRY("cuStreamBeginCapture_v2_ptsz");
  return begin_capture(hStream, mode);
}

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode*,
                                     const CUgraphEdgeData*, size_t, CUstreamCaptureMode mode) {
  FAKECUDA_ENTRY("cuStreamBeginCaptureToGraph");
  return begin_capture_to_graph(hStream, hGraph, mode);
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode*,
                                          const CUgraphEdgeData*, size_t,
                                          CUstreamCaptureMode mode) {
  FAKECUDA_ENTRY("cuStreamBeginCaptureToGraph_ptsz");
  return begin_capture_to_graph(hStream, hGraph, mode);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  FAKECUDA_ENTRY("cuStreamEndCapture");
  return end_capture(hStream, phGraph);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  FAKECUDA_ENTRY("cuStreamEndCapture_ptsz");
  return end_capture(hStream, phGraph);
}

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  FAKECUDA_ENTRY("cuGraphCreate");
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = reinterpret_cast<CUgraph>(new int(0));
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  FAKECUDA_ENTRY("cuGraphDestroy");
  if (hGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<int*>(hGraph);
  return CUDA_SUCCESS;
}
