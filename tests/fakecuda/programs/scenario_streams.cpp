// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_streams.cpp: streams_fence (the fake's held streams and events;
// under the shim, when a block freed with stream work queued comes back, by reuse_fence) and
// passthrough (the allocations the shim does not pool reach the driver). Not reuse_fence:auto's
// shortcuts: see scenario_fences.cpp.
#include <cstring>
#include <string>
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {

// --- streams_fence ----------------------------------------------------------------------------

int streams_fake(const Driver& d) {
  CUstream s = nullptr;
  FC_OK(d, d.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned flags = 0;
  FC_OK(d, d.StreamGetFlags(s, &flags));
  FC_CHECK(flags == CU_STREAM_NON_BLOCKING, "flags %u", flags);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  FC_OK(d, d.StreamIsCapturing(s, &capture));
  FC_CHECK(capture == CU_STREAM_CAPTURE_STATUS_NONE, "capturing");
  CUevent e = nullptr, e2 = nullptr;
  FC_OK(d, d.EventCreate(&e, CU_EVENT_DISABLE_TIMING));
  FC_OK(d, d.EventCreate(&e2, 0));

  say("unheld stream: recorded events are complete");
  FC_OK(d, d.EventRecord(e, s));
  FC_OK(d, d.EventQuery(e));
  FC_OK(d, d.StreamQuery(s));

  say("held stream: events stay incomplete until a synchronize; each synchronize counts");
  FC_CHECK(d.hold_stream(s, 1) == 0, "hold failed");
  unsigned long long s0 = d.sync_count();
  FC_OK(d, d.EventRecord(e, s));
  FC_OK(d, d.EventRecord(e2, s));
  FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
  FC_EXPECT_RC(d, d.StreamQuery(s), CUDA_ERROR_NOT_READY);
  FC_OK(d, d.StreamWaitEvent(nullptr, e, 0));
  FC_OK(d, d.EventSynchronize(e));
  FC_CHECK(d.sync_count() == s0 + 1, "sync count %llu", d.sync_count() - s0);
  FC_OK(d, d.EventQuery(e));
  FC_EXPECT_RC(d, d.EventQuery(e2), CUDA_ERROR_NOT_READY);  // recorded later: still queued
  FC_OK(d, d.StreamSynchronize(s));
  FC_OK(d, d.EventQuery(e2));
  FC_OK(d, d.StreamQuery(s));
  FC_OK(d, d.EventRecord(e, s));
  FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
  FC_OK(d, d.CtxSynchronize());
  FC_OK(d, d.EventQuery(e));
  FC_CHECK(d.sync_count() == s0 + 3, "sync count %llu", d.sync_count() - s0);

  say("releasing the hold completes queued events without a sync");
  FC_OK(d, d.EventRecord(e, s));
  FC_CHECK(d.hold_stream(s, 0) == 0, "release failed");
  FC_OK(d, d.EventQuery(e));
  FC_CHECK(d.sync_count() == s0 + 3, "release counted a sync");

  say("the default stream (0) can be held too; priority streams work");
  FC_CHECK(d.hold_stream(nullptr, 1) == 0, "hold of stream 0 failed");
  FC_OK(d, d.EventRecord(e, nullptr));
  FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
  FC_CHECK(d.hold_stream(nullptr, 0) == 0, "release of stream 0 failed");
  FC_OK(d, d.EventQuery(e));
  CUstream prio = nullptr;
  FC_OK(d, d.StreamCreateWithPriority(&prio, CU_STREAM_NON_BLOCKING, -1));
  FC_OK(d, d.StreamSynchronize(prio));
  FC_OK(d, d.StreamDestroy(prio));
  FC_EXPECT_RC(d, d.StreamQuery(prio), CUDA_ERROR_INVALID_HANDLE);
  FC_CHECK(d.hold_stream(prio, 1) == -1, "hold of a destroyed stream accepted");

  FC_OK(d, d.EventDestroy(e));
  FC_OK(d, d.EventDestroy(e2));
  FC_OK(d, d.StreamDestroy(s));
  return 0;
}

int streams_shim(const Driver& d, const std::string& fence) {
  CUstream s = nullptr;
  d.reset_counters();
  FC_OK(d, d.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  // reuse_fence:auto orders a new non-blocking stream after the work queued before it (blocks
  // freed with no fence may go to it): one event on the legacy stream, one wait on the new stream.
  const unsigned long long waits = d.calls("cuStreamWaitEvent") + d.calls("cuStreamWaitEvent_ptsz");
  say("creating a non-blocking stream: %llu stream wait(s) on a legacy-stream event", waits);
  FC_CHECK(waits == (fence == "auto" ? 1u : 0u), "reuse_fence:%s: %llu stream waits at creation",
           fence.c_str(), waits);
  CUevent e = nullptr;
  FC_OK(d, d.EventCreate(&e, CU_EVENT_DISABLE_TIMING));
  FC_CHECK(d.hold_stream(s, 1) == 0, "hold failed");
  say("reuse_fence:%s; a non-blocking stream with GPU work still queued (held)", fence.c_str());

  if (fence == "sync") {
    say("every free synchronizes the context: sync count +1 per free, block reusable at once");
    CUdeviceptr last = 0;
    for (int i = 0; i < 10; ++i) {
      CUdeviceptr p = alloc_ok(d, kMiB);
      if (i > 0) FC_CHECK(p == last, "free %d: block not reused after a synchronizing free", i);
      FC_OK(d, d.MemsetD8Async(p, 1, kMiB, s));
      FC_OK(d, d.EventRecord(e, s));
      unsigned long long before = d.sync_count();
      FC_OK(d, d.MemFree(p));
      unsigned long long grew = d.sync_count() - before;
      FC_CHECK(grew == 1, "free %d: sync count grew by %llu", i, grew);
      FC_OK(d, d.EventQuery(e));
      last = p;
    }
  } else {
    CUdeviceptr p = alloc_ok(d, kMiB);
    FC_OK(d, d.MemsetD8Async(p, 1, kMiB, s));  // the in-flight use
    FC_OK(d, d.EventRecord(e, s));
    FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
    FC_OK(d, d.MemFree(p));
    CUdeviceptr q = alloc_ok(d, kMiB);
    say("freed %#llx, next allocation %#llx", static_cast<unsigned long long>(p),
        static_cast<unsigned long long>(q));
    std::vector<CUdeviceptr> keep = {q};
    if (fence == "none") {
      FC_CHECK(q == p, "reuse_fence:none must hand the block out again at once");
    } else {
      FC_CHECK(q != p, "a block freed while its stream has queued work was reused");
      FC_CHECK(d.hold_stream(s, 0) == 0, "release failed");
      say("work done (hold released): a later allocation may reuse it");
      bool reused = false;
      for (int i = 0; i < 4 && !reused; ++i) {
        CUdeviceptr r = alloc_ok(d, kMiB);
        keep.push_back(r);
        reused = r == p;
      }
      FC_CHECK(reused, "the block was never reused after its stream finished");
    }
    for (CUdeviceptr x : keep) FC_OK(d, d.MemFree(x));
  }
  d.hold_stream(s, 0);
  FC_OK(d, d.EventDestroy(e));
  FC_OK(d, d.StreamDestroy(s));
  return 0;
}

// --- passthrough ------------------------------------------------------------------------------

int passthrough(const Driver& d) {
  const char* names[] = {"cuMemAllocManaged",
                         "cuMemAllocPitch_v2",
                         d.alloc_async_name.c_str(),
                         d.free_async_name.c_str(),
                         "cuMemAllocHost_v2",
                         "cuMemHostAlloc",
                         "cuMemFreeHost",
                         "cuMemCreate",
                         "cuMemMap",
                         d.alloc_from_pool_name.c_str()};
  const size_t kNames = sizeof(names) / sizeof(names[0]);
  unsigned long long before[kNames];
  for (size_t i = 0; i < kNames; ++i) before[i] = d.calls(names[i]);
  unsigned long long a0 = d.alloc_calls(), f0 = d.free_calls();

  say("managed, pitched, stream-ordered, pinned host and VMM allocations reach the driver");
  CUdeviceptr managed = 0, pitched = 0, async = 0;
  FC_OK(d, d.MemAllocManaged(&managed, kMiB, CU_MEM_ATTACH_GLOBAL));
  stamp(managed, kMiB, 11);
  size_t pitch = 0;
  FC_OK(d, d.MemAllocPitch(&pitched, &pitch, 1000, 10, 4));
  FC_CHECK(pitch >= 1000, "pitch %zu", pitch);
  stamp(pitched, pitch * 10, 12);
  FC_OK(d, d.MemAllocAsync(&async, kMiB, nullptr));
  stamp(async, kMiB, 13);
  FC_CHECK(d.is_live(managed) && d.is_live(pitched) && d.is_live(async),
           "the driver does not know these allocations");
  FC_OK(d, d.MemFreeAsync(async, nullptr));
  CUdeviceptr from_pool = 0;  // the fake does not model pools: any handle
  FC_OK(d, d.MemAllocFromPoolAsync(&from_pool, kMiB, reinterpret_cast<CUmemoryPool>(1), nullptr));
  stamp(from_pool, kMiB, 15);
  FC_CHECK(d.is_live(from_pool), "the driver does not know the pool allocation");
  FC_OK(d, d.MemFreeAsync(from_pool, nullptr));
  void* h1 = nullptr;
  void* h2 = nullptr;
  FC_OK(d, d.MemAllocHost(&h1, 4096));
  FC_OK(d, d.MemHostAlloc(&h2, 4096, CU_MEMHOSTALLOC_PORTABLE));
  std::memset(h1, 1, 4096);
  std::memset(h2, 2, 4096);
  FC_OK(d, d.MemFreeHost(h1));
  FC_OK(d, d.MemFreeHost(h2));

  const CUmemAllocationProp prop = device0_pinned();
  size_t granularity = 0;
  FC_OK(d, d.MemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr va = 0;
  FC_OK(d, d.MemAddressReserve(&va, 2 * granularity, 0, 0, 0));
  CUmemGenericAllocationHandle handle = 0;
  FC_OK(d, d.MemCreate(&handle, granularity, &prop, 0));
  FC_OK(d, d.MemMap(va, granularity, 0, handle, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  FC_OK(d, d.MemSetAccess(va, granularity, &access, 1));
  stamp(va, granularity, 14);
  FC_OK(d, d.MemUnmap(va, granularity));
  FC_OK(d, d.MemRelease(handle));
  FC_OK(d, d.MemAddressFree(va, 2 * granularity));

  for (size_t i = 0; i < kNames; ++i) {
    unsigned long long delta = d.calls(names[i]) - before[i];
    unsigned long long want = std::strcmp(names[i], "cuMemFreeHost") == 0 ? 2 : 1;
    if (names[i] == d.free_async_name) want = 2;
    say("%-22s reached the driver %llu time(s)", names[i], delta);
    FC_CHECK(delta == want, "%s: expected %llu call(s) in the driver", names[i], want);
  }
  FC_CHECK(d.alloc_calls() == a0, "these must not turn into cuMemAlloc_v2 (%llu)",
           d.alloc_calls() - a0);

  say("cuMemFree_v2 of managed and pitched memory reaches the driver");
  FC_OK(d, d.MemFree(managed));
  FC_OK(d, d.MemFree(pitched));
  FC_CHECK(d.free_calls() - f0 == 2, "%llu driver frees", d.free_calls() - f0);
  FC_CHECK(!d.is_live(managed) && !d.is_live(pitched), "still live in the driver");
  return 0;
}

}  // namespace fakecuda_test
