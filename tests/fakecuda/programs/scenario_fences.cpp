// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_fences.cpp: the shortcuts reuse_fence:auto takes, through the
// fake driver (which does not order streams: what is checked is what the shim decides, by the
// blocks it hands out and the events and waits it queues; tests/gpu/fence_shortcuts.cu checks the
// data on a GPU). A held stream (fakecuda_hold_stream) stands for one whose queued work has not
// run yet. Steps, in one process:
//   1. An idle non-blocking stream: frees after legacy-stream work come back at the next
//      allocation (one barrier, no event on the idle stream); with no work since, at once.
//   2. A join: work on a held non-blocking stream N, an event recorded on N after it, and the
//      legacy stream made to wait for it. The block freed then comes back at the next
//      allocation although N's work has not run (no event of the shim's on N).
//   3. Ordering before work: the block goes to another non-blocking stream M that was never made
//      to follow the legacy stream: the shim makes M wait for its barrier before the work (one
//      stream wait), once.
//   4. A fork: N made to wait for an event recorded on the legacy stream after the barrier: N's
//      next work needs no wait of the shim's.
//   5. No join: work on held N, freed: the block is not handed out while N is held (a new block
//      instead), and is once N's work ran.
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

unsigned long long records(const Driver& d) {
  return d.calls("cuEventRecord") + d.calls("cuEventRecord_ptsz");
}

unsigned long long waits(const Driver& d) {
  return d.calls("cuStreamWaitEvent") + d.calls("cuStreamWaitEvent_ptsz");
}

}  // namespace

int fence_shortcuts(const Driver& d, Mode mode, bool thread_cache) {
  if (mode != Mode::kShim) {
    say("fence_shortcuts runs under the shim only");
    return 0;
  }
  const char* conf = std::getenv("CUDAPOOL_CONF");
  FC_CHECK(conf != nullptr && std::string(conf).find("reuse_fence:none") == std::string::npos,
           "this scenario is for reuse_fence:auto");
  (void)thread_cache;

  // 1. An idle non-blocking stream.
  CUstream idle = nullptr;
  FC_OK(d, d.StreamCreate(&idle, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = alloc_ok(d, kMiB);
  FC_OK(d, d.MemsetD8Async(p, 1, kMiB, nullptr));  // legacy-stream work
  FC_OK(d, d.MemFree(p));
  unsigned long long r0 = records(d);
  CUdeviceptr q = alloc_ok(d, kMiB);
  say("1. idle non-blocking stream, legacy work, free: next block %s, %llu event(s) recorded",
      q == p ? "the same" : "another", records(d) - r0);
  FC_CHECK(q == p, "the block freed after legacy-stream work did not come back");
  FC_CHECK(records(d) - r0 <= 1, "more than the barrier was recorded for an idle stream");
  FC_OK(d, d.MemFree(q));
  r0 = records(d);
  q = alloc_ok(d, kMiB);
  FC_CHECK(q == p, "a block freed with no work since the barrier did not come back");
  FC_CHECK(records(d) == r0, "a free with no work since the last barrier recorded an event");
  say("   again with no work since: the same block, no event");

  // 2. A join.
  CUstream n = nullptr;
  CUstream m = nullptr;
  FC_OK(d, d.StreamCreate(&n, CU_STREAM_NON_BLOCKING));
  FC_OK(d, d.StreamCreate(&m, CU_STREAM_NON_BLOCKING));
  CUevent on_n = nullptr;
  CUevent on_legacy = nullptr;
  FC_OK(d, d.EventCreate(&on_n, CU_EVENT_DISABLE_TIMING));
  FC_OK(d, d.EventCreate(&on_legacy, CU_EVENT_DISABLE_TIMING));
  FC_CHECK(d.hold_stream(n, 1) == 0, "hold failed");
  FC_OK(d, d.MemsetD8Async(q, 2, kMiB, n));  // N's work on the block, not run yet
  FC_OK(d, d.EventRecord(on_n, n));
  FC_OK(d, d.StreamWaitEvent(nullptr, on_n, 0));  // joined into the legacy stream
  FC_OK(d, d.MemFree(q));
  r0 = records(d);
  CUdeviceptr j = alloc_ok(d, kMiB);
  say("2. work on held N joined into the legacy stream, free: next block %s, %llu event(s)",
      j == q ? "the same" : "another", records(d) - r0);
  FC_CHECK(j == q, "a block whose last work was joined into the legacy stream was not reused");
  FC_CHECK(records(d) - r0 == 1, "expected one barrier and no event on the joined stream");

  // 3. The block goes to M, never made to follow the legacy stream.
  unsigned long long w0 = waits(d);
  FC_OK(d, d.MemsetD8Async(j, 3, kMiB, m));
  FC_CHECK(waits(d) - w0 == 1, "M's work was not ordered after the barrier (%llu waits)",
           waits(d) - w0);
  w0 = waits(d);
  FC_OK(d, d.MemsetD8Async(j, 4, kMiB, m));
  FC_CHECK(waits(d) == w0, "M was ordered again with no barrier in between");
  say("3. the block's next work on another non-blocking stream: one stream wait first, once");

  // 4. A fork. Free j (M's work is not joined: M is not held, so its mark completes at once).
  FC_OK(d, d.MemFree(j));
  CUdeviceptr k = alloc_ok(d, kMiB);
  FC_CHECK(k == j, "a block whose last work (on an idle-again stream) completed was not reused");
  FC_OK(d, d.EventRecord(on_legacy, nullptr));
  FC_OK(d, d.StreamWaitEvent(n, on_legacy, 0));  // N follows the legacy stream from here
  w0 = waits(d);
  FC_OK(d, d.MemsetD8Async(k, 5, kMiB, n));
  FC_CHECK(waits(d) == w0, "a stream forked after the barrier was made to wait again");
  say("4. work on N after a fork from the legacy stream: no wait of the shim's");

  // 5. No join: N is still held, its work not joined.
  FC_OK(d, d.MemFree(k));
  std::vector<CUdeviceptr> keep;
  CUdeviceptr other = alloc_ok(d, kMiB);
  keep.push_back(other);
  say("5. work on held N, not joined, free: next block %s", other == k ? "the same" : "another");
  FC_CHECK(other != k, "a block freed while unjoined work on it is queued was reused");
  FC_CHECK(d.hold_stream(n, 0) == 0, "release failed");
  bool reused = false;
  for (int i = 0; i < 4 && !reused; ++i) {
    CUdeviceptr r = alloc_ok(d, kMiB);
    keep.push_back(r);
    reused = r == k;
  }
  FC_CHECK(reused, "the block was not reused after N's work ran");
  say("   once N's work ran: reused");
  for (CUdeviceptr x : keep) FC_OK(d, d.MemFree(x));

  FC_OK(d, d.EventDestroy(on_n));
  FC_OK(d, d.EventDestroy(on_legacy));
  FC_OK(d, d.StreamDestroy(n));
  FC_OK(d, d.StreamDestroy(m));
  FC_OK(d, d.StreamDestroy(idle));
  return 0;
}

}  // namespace fakecuda_test
