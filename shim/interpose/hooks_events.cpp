// SPDX-License-Identifier: Apache-2.0
// shim/interpose/hooks_events.cpp: event records, stream waits and event destruction, for the reuse
// fences (reuse_fence:auto; with other settings they are plain pass-throughs). A record notes where
// the event was recorded (stream_registry.h, EventInfo), so that a wait on it tells which work it
// orders: a non-blocking stream's work joined into a legacy-ordered stream (cuDNN and PyTorch
// fork work onto side streams and join it back this way), or a non-blocking stream made to follow
// legacy-ordered work (a fork). The calls themselves always go to the driver unchanged; the notes
// are made after the record or wait was queued.
#include "shim/driver/export.h"
#include "shim/interpose/hooks.h"
#include "shim/interpose/stream_work.h"
#include "shim/pools/context_registry.h"
#include "shim/pools/stream_capture.h"

using namespace cudapool::shim;

namespace {

// The fences an event recorded on (or a wait queued on) a legacy-ordered stream refers to: a
// tracked blocking stream's pool, else the current context's.
ReuseFence* fence_of(const StreamRef& ref) {
  if (ref.entry != nullptr) return ref.entry->fence.load(std::memory_order_acquire);
  CUresult ignored = CUDA_SUCCESS;
  ContextPool* p = current_pool(&ignored);
  return p != nullptr ? &p->backend.fence() : nullptr;
}

bool tracking() {
  return g_track_streams.load(std::memory_order_relaxed) && pooling();
}

void raise_to(std::atomic<std::uint64_t>& word, std::uint64_t value) {
  std::uint64_t seen = word.load(std::memory_order_relaxed);
  while (seen < value && !word.compare_exchange_weak(seen, value, std::memory_order_seq_cst)) {
  }
}

template <class Call>
CUresult recorded(CUevent event, CUstream stream, bool per_thread, Call&& call) {
  if (!tracking()) return call();
  ReentrancyGuard guard;
  if (captures_in_progress().load(std::memory_order_relaxed) != 0) {
    // A record during a capture may be a node of the graph: nothing is concluded from it.
    const CUresult r = call();
    set_event_info(event, EventInfo{});
    return r;
  }
  const StreamRef ref = classify_stream(stream, per_thread);
  if (ref.kind == StreamKind::kNonBlocking) {
    // Numbered before it is queued: work the hooks noted before this number is covered by it.
    const std::uint64_t k = ref.entry->records.fetch_add(1, std::memory_order_seq_cst) + 1;
    const CUresult r = call();
    if (r == CUDA_SUCCESS) {
      set_event_info(event, EventInfo{EventOrigin::kNonBlocking, slot_of(ref.entry), k});
    }
    return r;
  }
  ReuseFence* fence = fence_of(ref);
  // Read before the record: the barriers counted are queued before it.
  const std::uint64_t g = fence != nullptr ? fence->generation() : 0;
  const CUresult r = call();
  if (r == CUDA_SUCCESS) {
    set_event_info(event, fence != nullptr ? EventInfo{EventOrigin::kOrdered, fence->pool_slot(), g}
                                           : EventInfo{});
  }
  return r;
}

template <class Call>
CUresult waited(CUstream stream, CUevent event, bool per_thread, Call&& call) {
  if (!tracking()) return call();
  const CUresult r = call();
  if (r != CUDA_SUCCESS) return r;
  ReentrancyGuard guard;
  const EventInfo info = event_info(event);
  const StreamRef ref = classify_stream(stream, per_thread);
  if (ref.kind == StreamKind::kNonBlocking) {
    // A fork: the stream's later work follows the barriers counted at the record.
    ReuseFence* fence = ref.entry->fence.load(std::memory_order_acquire);
    if (info.origin == EventOrigin::kOrdered && fence != nullptr &&
        info.slot == fence->pool_slot()) {
      raise_to(ref.entry->ordered_gen, info.value);
    }
    return r;
  }
  if (info.origin == EventOrigin::kNonBlocking) {
    // A join: the non-blocking stream's work up to that record now precedes this stream's.
    TrackedStream* joined = stream_at(info.slot);
    if (joined != nullptr && joined->fence.load(std::memory_order_acquire) == fence_of(ref)) {
      raise_to(joined->joined, info.value);
    }
  }
  // The wait orders this stream's later work after other work: it counts as its work.
  stream_work_queued(ref, stream, "cuStreamWaitEvent");
  return r;
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  return recorded(event, stream, false,
                  [&] { return CUDAPOOL_PASS(cuEventRecord, event, stream); });
}

CUDAPOOL_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
  return recorded(event, stream, true,
                  [&] { return CUDAPOOL_PASS(cuEventRecord_ptsz, event, stream); });
}

CUDAPOOL_EXPORT CUresult cuEventRecordWithFlags(CUevent event, CUstream stream,
                                                unsigned int flags) {
  return recorded(event, stream, false,
                  [&] { return CUDAPOOL_PASS(cuEventRecordWithFlags, event, stream, flags); });
}

CUDAPOOL_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream,
                                                     unsigned int flags) {
  return recorded(event, stream, true,
                  [&] { return CUDAPOOL_PASS(cuEventRecordWithFlags_ptsz, event, stream, flags); });
}

CUDAPOOL_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  return waited(stream, event, false,
                [&] { return CUDAPOOL_PASS(cuStreamWaitEvent, stream, event, flags); });
}

CUDAPOOL_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event,
                                                unsigned int flags) {
  return waited(stream, event, true,
                [&] { return CUDAPOOL_PASS(cuStreamWaitEvent_ptsz, stream, event, flags); });
}

CUDAPOOL_EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  if (g_track_streams.load(std::memory_order_relaxed)) forget_event(event);
  return CUDAPOOL_PASS(cuEventDestroy_v2, event);
}
