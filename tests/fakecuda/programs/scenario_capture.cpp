// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_capture.cpp: capture_rules. cuMemAlloc_v2 and cuMemFree_v2
// while a stream capture is in progress get the same answers with the shim as without it: refused
// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated) where the capture's mode and
// the thread's interaction mode forbid them, served where they do not. The fake states the
// driver's documented rule (tests/fakecuda/src/capture.cpp); before the shim knew it, a cached
// block was handed out during a global capture (PyTorch with its cache off then captured a graph
// whose buffers the pool gave to later tensors). Under the shim it also checks that an allowed
// allocation during a capture is served from the pool (no driver allocation) and that with no
// capture in progress the hooks ask the driver nothing more. Not here: graph replay (the fake has
// none; tests/gpu/torch_graph.py), the real driver's answers (tests/gpu/capture_rules.cpp).
#include <string>
#include <thread>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

constexpr size_t kBytes = kMiB;
constexpr auto kGlobal = CU_STREAM_CAPTURE_MODE_GLOBAL;
constexpr auto kThreadLocal = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
constexpr auto kRelaxed = CU_STREAM_CAPTURE_MODE_RELAXED;

CUstreamCaptureStatus status_of(const Driver& d, CUstream s) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  FC_OK(d, d.StreamIsCapturing(s, &status));
  return status;
}

// Ends the capture on s, expecting `expected`; destroys the graph it made.
void end_capture(const Driver& d, CUstream s, CUresult expected) {
  CUgraph graph = nullptr;
  FC_EXPECT_RC(d, d.StreamEndCapture(s, &graph), expected);
  FC_CHECK((graph != nullptr) == (expected == CUDA_SUCCESS), "graph %p", static_cast<void*>(graph));
  if (graph != nullptr) FC_OK(d, d.GraphDestroy(graph));
}

// cuMemAlloc_v2 on another thread (context made current, interaction mode set first).
CUresult alloc_on_thread(const Driver& d, CUstreamCaptureMode mode, CUdeviceptr* out) {
  const CUcontext ctx = current(d);
  CUresult rc = CUDA_ERROR_UNKNOWN;
  std::thread t([&] {
    if (d.CtxSetCurrent(ctx) != CUDA_SUCCESS) return;
    CUstreamCaptureMode m = mode;
    if (d.ThreadExchangeStreamCaptureMode(&m) != CUDA_SUCCESS) return;
    rc = d.MemAlloc(out, kBytes);
  });
  t.join();
  return rc;
}

}  // namespace

int capture_rules(const Driver& d, Mode mode) {
  const bool shim = mode == Mode::kShim;
  CUstream s = nullptr;
  FC_OK(d, d.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  // The size the cases ask for, freed first: under the shim the pool then holds it.
  FC_OK(d, d.MemFree(alloc_ok(d, kBytes)));

  say("global capture: an allocation on its thread is refused and the capture invalidated");
  FC_OK(d, d.StreamBeginCapture(s, kGlobal));
  CUdeviceptr p = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&p, kBytes), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  FC_CHECK(p == 0, "a refused allocation set the pointer");
  FC_CHECK(status_of(d, s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "capture not invalidated");
  end_capture(d, s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  say("global capture: a free on its thread is refused; the block stays the program's");
  const CUdeviceptr victim = alloc_ok(d, kBytes);
  stamp(victim, kBytes, 0xcafe);
  FC_OK(d, d.StreamBeginCapture(s, kGlobal));
  FC_EXPECT_RC(d, d.MemFree(victim), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  end_capture(d, s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  const CUdeviceptr other = alloc_ok(d, kBytes);  // the refused free gave nothing to the pool
  FC_CHECK(other != victim, "the block whose free was refused was handed out again");
  FC_CHECK(stamped(victim, kBytes, 0xcafe), "the block whose free was refused changed");
  FC_OK(d, d.MemFree(victim));
  FC_OK(d, d.MemFree(other));

  say("thread_local capture: refused on its thread too");
  FC_OK(d, d.StreamBeginCapture(s, kThreadLocal));
  FC_EXPECT_RC(d, d.MemAlloc(&p, kBytes), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  end_capture(d, s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  say("global capture, the thread in relaxed mode (PyTorch's allocator): served");
  const unsigned long long driver_allocs = d.calls("cuMemAlloc_v2");
  FC_OK(d, d.StreamBeginCapture(s, kGlobal));
  CUstreamCaptureMode m = kRelaxed;
  FC_OK(d, d.ThreadExchangeStreamCaptureMode(&m));
  FC_CHECK(m == kGlobal, "the thread's mode was %d, expected global", static_cast<int>(m));
  FC_OK(d, d.MemAlloc(&p, kBytes));
  FC_OK(d, d.ThreadExchangeStreamCaptureMode(&m));
  FC_CHECK(status_of(d, s) == CU_STREAM_CAPTURE_STATUS_ACTIVE, "capture not active");
  end_capture(d, s, CUDA_SUCCESS);
  if (shim) {
    FC_CHECK(d.calls("cuMemAlloc_v2") == driver_allocs,
             "served from the pool: %llu driver allocations",
             d.calls("cuMemAlloc_v2") - driver_allocs);
  }
  FC_OK(d, d.MemFree(p));

  say("relaxed capture: allocations and frees on its thread are served");
  FC_OK(d, d.StreamBeginCapture(s, kRelaxed));
  FC_OK(d, d.MemAlloc(&p, kBytes));
  FC_OK(d, d.MemFree(p));
  end_capture(d, s, CUDA_SUCCESS);

  say("global capture: another thread in global mode is refused, in thread_local mode served");
  FC_OK(d, d.StreamBeginCapture(s, kGlobal));
  p = 0;
  FC_OK(d, alloc_on_thread(d, kThreadLocal, &p));
  FC_CHECK(status_of(d, s) == CU_STREAM_CAPTURE_STATUS_ACTIVE, "capture not active");
  end_capture(d, s, CUDA_SUCCESS);
  FC_OK(d, d.MemFree(p));
  FC_OK(d, d.StreamBeginCapture(s, kGlobal));
  CUdeviceptr q = 0;
  FC_EXPECT_RC(d, alloc_on_thread(d, kGlobal, &q), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  end_capture(d, s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  say("thread_local capture: another thread in global mode is served");
  FC_OK(d, d.StreamBeginCapture(s, kThreadLocal));
  p = 0;
  FC_OK(d, alloc_on_thread(d, kGlobal, &p));
  end_capture(d, s, CUDA_SUCCESS);
  FC_OK(d, d.MemFree(p));

  say("a global capture into an existing graph (cuStreamBeginCaptureToGraph) forbids too");
  CUgraph graph = nullptr;
  FC_OK(d, d.GraphCreate(&graph, 0));
  FC_OK(d, d.StreamBeginCaptureToGraph(s, graph, nullptr, nullptr, 0, kGlobal));
  FC_EXPECT_RC(d, d.MemAlloc(&p, kBytes), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  end_capture(d, s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  FC_OK(d, d.GraphDestroy(graph));

  say("no capture in progress: pairs served as before, nothing more asked of the driver");
  const unsigned long long exchanges = d.calls("cuThreadExchangeStreamCaptureMode");
  const unsigned long long allocs = d.calls("cuMemAlloc_v2");
  for (int i = 0; i < 100; ++i) FC_OK(d, d.MemFree(alloc_ok(d, kBytes)));
  FC_CHECK(d.calls("cuThreadExchangeStreamCaptureMode") == exchanges, "mode asked %llu times",
           d.calls("cuThreadExchangeStreamCaptureMode") - exchanges);
  if (shim) FC_CHECK(d.calls("cuMemAlloc_v2") == allocs, "pairs reached the driver");
  FC_OK(d, d.StreamDestroy(s));
  return 0;
}

}  // namespace fakecuda_test
