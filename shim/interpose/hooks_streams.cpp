// SPDX-License-Identifier: Apache-2.0
// shim/interpose/hooks_streams.cpp: stream creation and destruction (streams are registered for the
// reuse fences of their context, stream_registry.h, and logged) and stream capture begin/end
// (reported to stream_capture.h: while a capture runs, the shim records and waits on nothing, and
// the pooled hooks refuse what the driver would refuse). The calls themselves always go to the
// driver unchanged. Event records and waits: hooks_events.cpp.
#include "shim/driver/export.h"
#include "shim/interpose/hooks.h"
#include "shim/interpose/stream_work.h"
#include "shim/pools/context_registry.h"
#include "shim/pools/stream_capture.h"
#include "shim/recording/event_log.h"
#include "shim/support/settings.h"

using namespace cudapool::shim;

namespace {

// A stream the driver made: registered (note_stream_created). reuse_fence:auto must know a
// non-blocking stream's pool (its fences mark the stream's work): when the current context's pool
// cannot be found (a driver call failed), the stream is destroyed and the creation fails with
// that error (before, the stream went untracked and a block freed after its work could be handed
// out while the work was queued: found by tests/fakecuda/fault_sweep.sh).
CUresult created(CUresult r, CUstream* stream, unsigned int flags, const char* entry) {
  if (r != CUDA_SUCCESS || stream == nullptr || !pooling()) return r;
  ReentrancyGuard guard;
  if (const CUresult error = note_stream_created(*stream, flags, entry); error != CUDA_SUCCESS) {
    real().cuStreamDestroy_v2(*stream);
    *stream = nullptr;
    return error;
  }
  return r;
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  return created(CUDAPOOL_PASS(cuStreamCreate, stream, flags), stream, flags, "cuStreamCreate");
}

CUDAPOOL_EXPORT CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags,
                                                    int priority) {
  return created(CUDAPOOL_PASS(cuStreamCreateWithPriority, stream, flags, priority), stream, flags,
                 "cuStreamCreateWithPriority");
}

CUDAPOOL_EXPORT CUresult cuGreenCtxStreamCreate(CUstream* stream, CUgreenCtx green,
                                                unsigned int flags, int priority) {
  const CUresult r = CUDAPOOL_PASS(cuGreenCtxStreamCreate, stream, green, flags, priority);
  if (r == CUDA_SUCCESS && stream != nullptr && pooling()) {
    ReentrancyGuard guard;
    // Its work runs in the green context, not in a pool's context: the shim cannot follow it.
    if (g_track_streams.load(std::memory_order_relaxed)) note_untracked_nonblocking();
    if (!reporting().log_template.empty()) {
      log_stream_event(cudapool::log::LogAction::kStreamCreated,
                       reinterpret_cast<std::uint64_t>(*stream), flags, "cuGreenCtxStreamCreate");
    }
  }
  return r;
}

CUDAPOOL_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  if (pooling()) {
    ReentrancyGuard guard;
    note_stream_destroyed(stream);
  }
  return CUDAPOOL_PASS(cuStreamDestroy_v2, stream);
}

namespace {

CUresult begun(CUresult r, CUstream stream, CUstreamCaptureMode mode) {
  if (r == CUDA_SUCCESS) note_capture_begun(stream, mode);
  return r;
}

CUresult ended(CUresult r, CUstream stream) {
  // The capture is over when EndCapture succeeds or reports it invalidated.
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) note_capture_ended(stream);
  return r;
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  return begun(CUDAPOOL_PASS(cuStreamBeginCapture_v2, stream, mode), stream, mode);
}

CUDAPOOL_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  return begun(CUDAPOOL_PASS(cuStreamBeginCapture_v2_ptsz, stream, mode), stream, mode);
}

CUDAPOOL_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph,
                                                     const CUgraphNode* dependencies,
                                                     const CUgraphEdgeData* edge_data, size_t count,
                                                     CUstreamCaptureMode mode) {
  return begun(CUDAPOOL_PASS(cuStreamBeginCaptureToGraph, stream, graph, dependencies, edge_data,
                             count, mode),
               stream, mode);
}

CUDAPOOL_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph,
                                                          const CUgraphNode* dependencies,
                                                          const CUgraphEdgeData* edge_data,
                                                          size_t count, CUstreamCaptureMode mode) {
  return begun(CUDAPOOL_PASS(cuStreamBeginCaptureToGraph_ptsz, stream, graph, dependencies,
                             edge_data, count, mode),
               stream, mode);
}

CUDAPOOL_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return ended(CUDAPOOL_PASS(cuStreamEndCapture, stream, graph), stream);
}

CUDAPOOL_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
  return ended(CUDAPOOL_PASS(cuStreamEndCapture_ptsz, stream, graph), stream);
}
