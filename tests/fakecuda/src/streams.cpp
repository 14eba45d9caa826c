// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/streams.cpp: streams and events as host objects. Work is complete at once
// unless a test holds the stream (fakecuda_hold_stream): then events recorded on it stay incomplete
// until a synchronize (event, stream or context; each call counts one sync) or the hold's release.
// Not modelled: cross-stream dependencies (cuStreamWaitEvent only validates), timing, callbacks;
// cuMemFree does not synchronize. Capture: capture.cpp.
#include "exports.h"
#include "state.h"

using namespace fakecuda;

namespace {

Event* find_event(CUevent handle) {
  auto* e = reinterpret_cast<Event*>(handle);
  return S().events.count(e) != 0 ? e : nullptr;
}

CUresult create_stream(CUstream* phStream, unsigned flags, int priority) {
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)
    return CUDA_ERROR_INVALID_VALUE;
  auto* s = new Stream();
  s->ctx = ctx;
  s->flags = flags;
  s->priority = priority < -5 ? -5 : (priority > 0 ? 0 : priority);
  S().streams.insert(s);
  *phStream = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

CUresult destroy_stream(CUstream handle) {
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* s = reinterpret_cast<Stream*>(handle);
  if (S().streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  complete_pending(s);  // like the driver, queued work finishes first
  S().streams.erase(s);
  delete s;
  return CUDA_SUCCESS;
}

CUresult stream_synchronize(CUstream handle) {
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(handle, &rc);
  if (s == nullptr) return rc;
  complete_pending(s);
  ++S().sync_count;
  return CUDA_SUCCESS;
}

CUresult stream_query(CUstream handle) {
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(handle, &rc);
  if (s == nullptr) return rc;
  return s->pending.empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult stream_get_flags(CUstream handle, unsigned* flags) {
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(handle, &rc);
  if (s == nullptr) return rc;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = s->flags;
  return CUDA_SUCCESS;
}

CUresult stream_is_capturing(CUstream handle, CUstreamCaptureStatus* status) {
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(handle, &rc);
  if (s == nullptr) return rc;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *status = s->capture;
  return CUDA_SUCCESS;
}

CUresult stream_wait_event(CUstream handle, CUevent event, unsigned flags) {
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(handle, &rc);
  if (s == nullptr) return rc;
  if (find_event(event) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 && flags != CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

void unlink_event(Event* e) {
  if (e->stream == nullptr) return;
  auto& pending = e->stream->pending;
  for (auto it = pending.begin(); it != pending.end(); ++it) {
    if (*it == e) {
      pending.erase(it);
      break;
    }
  }
  e->stream = nullptr;
}

CUresult event_record(CUevent handle, CUstream stream) {
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  Event* e = find_event(handle);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  CUresult rc = CUDA_SUCCESS;
  Stream* s = resolve_stream(stream, &rc);
  if (s == nullptr) return rc;
  unlink_event(e);
  if (s->held) {
    e->complete = false;
    e->stream = s;
    s->pending.push_back(e);
  } else {
    e->complete = true;
  }
  return CUDA_SUCCESS;
}

CUresult destroy_event(CUevent handle) {
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  Event* e = find_event(handle);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  unlink_event(e);
  S().events.erase(e);
  delete e;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  FAKECUDA_ENTRY("cuStreamCreate");
  return create_stream(phStream, Flags, 0);
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  FAKECUDA_ENTRY("cuStreamCreateWithPriority");
  return create_stream(phStream, flags, priority);
}

CUresult cuStreamDestroy(CUstream hStream) {
  FAKECUDA_ENTRY("cuStreamDestroy");
  return destroy_stream(hStream);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  FAKECUDA_ENTRY("cuStreamDestroy_v2");
  return destroy_stream(hStream);
}

CUresult cuStreamSynchronize(CUstream hStream) {
  FAKECUDA_WAIT_ENTRY("cuStreamSynchronize");
  return FAKECUDA_WAITED(stream_synchronize(hStream));
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  FAKECUDA_WAIT_ENTRY("cuStreamSynchronize_ptsz");
  return FAKECUDA_WAITED(stream_synchronize(hStream));
}

CUresult cuStreamQuery(CUstream hStream) {
  FAKECUDA_ENTRY("cuStreamQuery");
  return stream_query(hStream);
}

CUresult cuStreamQuery_ptsz(CUstream hStream) {
  FAKECUDA_ENTRY("cuStreamQuery_ptsz");
  return stream_query(hStream);
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  FAKECUDA_ENTRY("cuStreamGetFlags");
  return stream_get_flags(hStream, flags);
}

CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  FAKECUDA_ENTRY("cuStreamGetFlags_ptsz");
  return stream_get_flags(hStream, flags);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  FAKECUDA_ENTRY("cuStreamIsCapturing");
  return stream_is_capturing(hStream, captureStatus);
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  FAKECUDA_ENTRY("cuStreamIsCapturing_ptsz");
  return stream_is_capturing(hStream, captureStatus);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FAKECUDA_ENTRY("cuStreamWaitEvent");
  return stream_wait_event(hStream, hEvent, Flags);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FAKECUDA_ENTRY("cuStreamWaitEvent_ptsz");
  return stream_wait_event(hStream, hEvent, Flags);
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  FAKECUDA_ENTRY("cuEventCreate");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (phEvent == nullptr || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new Event();
  e->flags = Flags;
  S().events.insert(e);
  *phEvent = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  FAKECUDA_ENTRY("cuEventRecord");
  return event_record(hEvent, hStream);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  FAKECUDA_ENTRY("cuEventRecord_ptsz");
  return event_record(hEvent, hStream);
}

CUresult cuEventQuery(CUevent hEvent) {
  FAKECUDA_ENTRY("cuEventQuery");
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  Event* e = find_event(hEvent);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return e->complete ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  FAKECUDA_WAIT_ENTRY("cuEventSynchronize");
  if (!S().initialized) return FAKECUDA_WAITED(CUDA_ERROR_NOT_INITIALIZED);
  Event* e = find_event(hEvent);
  if (e == nullptr) return FAKECUDA_WAITED(CUDA_ERROR_INVALID_HANDLE);
  if (!e->complete && e->stream != nullptr) complete_through(e->stream, e);
  e->complete = true;
  ++S().sync_count;
  return FAKECUDA_WAITED(CUDA_SUCCESS);
}

CUresult cuEventDestroy(CUevent hEvent) {
  FAKECUDA_ENTRY("cuEventDestroy");
  return destroy_event(hEvent);
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  FAKECUDA_ENTRY("cuEventDestroy_v2");
  return destroy_event(hEvent);
}

}  // extern "C"
