// SPDX-License-Identifier: Apache-2.0
// tests/gpu/capture_rules.cpp: what the driver answers to cuMemAlloc_v2 and cuMemFree_v2 (and a few
// calls beside them) while a stream capture is in progress, one RESULT line a case. The GPU suite
// (sections/capture.sh) runs it without the shim and under it and compares the lines (as
// tests/fakecuda/gpu_program_results.sh does through the fake driver): the shim must answer as
// the driver does, refusing where the driver refuses (and so invalidating the capture)
// and serving where it serves. The cases: the capture's mode (global, thread_local, relaxed), the
// calling thread's interaction mode (cuThreadExchangeStreamCaptureMode: PyTorch's allocator calls
// cudaMalloc in relaxed mode while it captures), and the thread (the capturing one or another).
// Not here: graphs' replay (torch_graph.py), the pool's own driver calls during a capture.
#include <cstring>
#include <string>
#include <thread>

#include "driver_common.h"

namespace {

CUcontext g_ctx = nullptr;
constexpr size_t kBytes = 1 << 20;

const char* status_name(CUstreamCaptureStatus s) {
  switch (s) {
    case CU_STREAM_CAPTURE_STATUS_NONE:
      return "none";
    case CU_STREAM_CAPTURE_STATUS_ACTIVE:
      return "active";
    case CU_STREAM_CAPTURE_STATUS_INVALIDATED:
      return "invalidated";
  }
  return "?";
}

// Runs call(): on this thread, or on a new one (whose interaction mode is set to thread_mode
// first).
template <class Call>
CUresult on_thread(bool other_thread, CUstreamCaptureMode thread_mode, Call call) {
  CUresult r = CUDA_SUCCESS;
  auto body = [&] {
    cuCtxSetCurrent(g_ctx);
    CUstreamCaptureMode m = thread_mode;
    cuThreadExchangeStreamCaptureMode(&m);
    r = call();
    cuThreadExchangeStreamCaptureMode(&m);
  };
  if (other_thread) {
    std::thread t(body);
    t.join();
  } else {
    body();
  }
  return r;
}

// One case: a capture in capture_mode on a fresh stream (one memset captured first), then call()
// with the given thread and interaction mode, then the capture's status and how it ends.
template <class Call>
void capture_case(const char* name, CUstreamCaptureMode capture_mode, bool other_thread,
                  CUstreamCaptureMode thread_mode, Call call) {
  CUstream s = nullptr;
  CU_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr scratch = 0;
  CU_CHECK(cuMemAlloc_v2(&scratch, 4096));
  CU_CHECK(cuStreamBeginCapture_v2(s, capture_mode));
  CU_CHECK(cuMemsetD8Async(scratch, 1, 4096, s));
  const CUresult r = on_thread(other_thread, thread_mode, call);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult q = cuStreamIsCapturing(s, &status);
  CUgraph graph = nullptr;
  const CUresult end = cuStreamEndCapture(s, &graph);
  printf("RESULT %s call %s, stream %s, end %s%s\n", name, cu_name(r),
         q == CUDA_SUCCESS ? status_name(status) : cu_name(q), cu_name(end),
         graph != nullptr ? ", graph" : "");
  if (graph != nullptr) cuGraphDestroy(graph);
  CU_CHECK(cuStreamSynchronize(s));
  CU_CHECK(cuStreamDestroy_v2(s));
  CU_CHECK(cuMemFree_v2(scratch));
}

// The pointer an allocation case got, freed once its capture is over.
CUdeviceptr g_got = 0;
CUresult alloc_call() {
  g_got = 0;
  return cuMemAlloc_v2(&g_got, kBytes);
}
void free_got() {
  if (g_got != 0) CU_CHECK(cuMemFree_v2(g_got));
  g_got = 0;
}

// A pointer allocated before the capture, freed during it (if the free is refused, after it).
CUdeviceptr g_victim = 0;
CUresult free_call() {
  const CUresult r = cuMemFree_v2(g_victim);
  if (r == CUDA_SUCCESS) g_victim = 0;
  return r;
}

void alloc_case(const char* name, CUstreamCaptureMode capture_mode, bool other_thread,
                CUstreamCaptureMode thread_mode) {
  capture_case((std::string("alloc-") + name).c_str(), capture_mode, other_thread, thread_mode,
               alloc_call);
  free_got();
}

void free_case(const char* name, CUstreamCaptureMode capture_mode, bool other_thread,
               CUstreamCaptureMode thread_mode) {
  CU_CHECK(cuMemAlloc_v2(&g_victim, kBytes));
  capture_case((std::string("free-") + name).c_str(), capture_mode, other_thread, thread_mode,
               free_call);
  if (g_victim != 0) CU_CHECK(cuMemFree_v2(g_victim));
  g_victim = 0;
}

}  // namespace

int main() {
  CUdevice dev = 0;
  g_ctx = start_on_primary("capture_rules", &dev);
  // Memory of the size the cases ask for, freed first: under the shim the pool holds it, so an
  // allocation during the capture would be served from the cache without asking the driver.
  CUdeviceptr warm = 0;
  CU_CHECK(cuMemAlloc_v2(&warm, kBytes));
  CU_CHECK(cuMemFree_v2(warm));

  constexpr auto G = CU_STREAM_CAPTURE_MODE_GLOBAL;
  constexpr auto T = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  constexpr auto R = CU_STREAM_CAPTURE_MODE_RELAXED;
  for (auto* run : {&alloc_case, &free_case}) {
    run("global-capture/same-thread/global", G, false, G);
    run("global-capture/same-thread/thread_local", G, false, T);
    run("global-capture/same-thread/relaxed", G, false, R);
    run("thread_local-capture/same-thread/global", T, false, G);
    run("relaxed-capture/same-thread/global", R, false, G);
    run("global-capture/other-thread/global", G, true, G);
    run("global-capture/other-thread/thread_local", G, true, T);
    run("thread_local-capture/other-thread/global", T, true, G);
    run("relaxed-capture/other-thread/global", R, true, G);
  }
  // Calls beside them, during a global capture on this thread.
  capture_case("free-of-0", G, false, G, [] { return cuMemFree_v2(0); });
  capture_case("alloc-of-0-bytes", G, false, G, [] {
    CUdeviceptr p = 0;
    return cuMemAlloc_v2(&p, 0);
  });
  capture_case("get-info", G, false, G, [] {
    size_t free_bytes = 0, total = 0;
    return cuMemGetInfo_v2(&free_bytes, &total);
  });
  capture_case("context-synchronize", G, false, G, [] { return cuCtxSynchronize(); });
  // The VMM calls an expandable segment makes, in a global capture on this thread.
  capture_case("vmm-create-map-unmap-release", G, false, G, [] {
    CUmemAllocationProp prop;
    std::memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUmemGenericAllocationHandle h = 0;
    CUresult r = cuMemCreate(&h, gran, &prop, 0);
    if (r != CUDA_SUCCESS) return r;
    CUdeviceptr va = 0;
    CUresult rr = cuMemAddressReserve(&va, gran, 0, 0, 0);
    CUresult rm = rr == CUDA_SUCCESS ? cuMemMap(va, gran, 0, h, 0) : rr;
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof access);
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult ra = rm == CUDA_SUCCESS ? cuMemSetAccess(va, gran, &access, 1) : rm;
    CUresult ru = rm == CUDA_SUCCESS ? cuMemUnmap(va, gran) : rm;
    if (rr == CUDA_SUCCESS) cuMemAddressFree(va, gran);
    CUresult rl = cuMemRelease(h);
    printf("RESULT vmm-calls reserve %s, map %s, set access %s, unmap %s, release %s\n",
           cu_name(rr), cu_name(rm), cu_name(ra), cu_name(ru), cu_name(rl));
    return CUDA_SUCCESS;
  });
  // CUDA still works after the cases.
  CUdeviceptr p = 0;
  CU_CHECK(cuMemAlloc_v2(&p, kBytes));
  CU_CHECK(cuMemsetD8(p, 7, kBytes));
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemFree_v2(p));
  printf("capture_rules: done, 0 failed checks\n");
  return 0;
}
