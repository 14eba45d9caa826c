// SPDX-License-Identifier: Apache-2.0
// tests/gpu/odd_uses.cu: legal but unusual uses of the allocator that none of the other GPU
// programs make, run with and without the shim by run.sh (section `errors`), whose answers are
// compared line by line. Not a test of error codes for bad input (errors.cu) nor of cross-stream
// reuse in general (cross_stream.cu, late_stream.cu).
//
// Output lines, as in errors.cu:
//   RESULT key value       must be the same with and without the shim
//   RESULT-SOFT key value  reported when they differ, not a failure
//   INFO key value         measurements and notes
//   CHECK-FAIL where: why  a check that failed in this run (exit status 1)
//
// Cases, in order:
//   no_context    a thread with no current context asks cuPointerGetAttribute and
//                 cuMemGetAddressRange about a block, then frees it with cuMemFree_v2
//   free_async    cudaFreeAsync on a non-blocking stream of a cudaMalloc block that a kernel on
//                 that stream still reads; a new block of the same size is at once filled from
//                 another non-blocking stream; the reader must see the old data
//   relaxed_capture  cudaMalloc and cudaFree inside a relaxed-mode stream capture (one served
//                 from a freed block, one new), the capture ended, instantiated and replayed
//   host_func     cudaMalloc and cudaFree from inside a cudaLaunchHostFunc callback
//   after_free    cudaPointerGetAttributes and cuMemGetAddressRange of a freed pointer
//   many_small    200000 blocks of 256 B live at once, checked for overlap, then freed
//
//   odd_uses    (no arguments; exit 0 when every check passed)
//
// Not here: returning from main while other threads still call cudaMalloc/cudaFree. Without the
// shim that process died of SIGSEGV inside CUDA's teardown on the H200 (docs/gpu-validation.md),
// so no test can ask the shim to do better.
#include <cuda.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "common.h"
#include "result_lines.h"

namespace {

using result_lines::cu_en;
using result_lines::en;
using result_lines::g_fail;
using result_lines::line;

constexpr size_t MiB = size_t(1) << 20;

void no_context() {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, MiB));
  fill_async(p, MiB, 11);
  CHECK(cudaDeviceSynchronize());
  const auto dp = reinterpret_cast<CUdeviceptr>(p);
  CUresult cur = CUDA_SUCCESS, attr = CUDA_SUCCESS, range = CUDA_SUCCESS, fr = CUDA_SUCCESS;
  CUcontext ctx = reinterpret_cast<CUcontext>(1);
  int ordinal = -1;
  CUdeviceptr base = 0;
  size_t size = 0;
  std::thread t([&] {
    cur = cuCtxGetCurrent(&ctx);
    attr = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dp);
    range = cuMemGetAddressRange_v2(&base, &size, dp);
    fr = cuMemFree_v2(dp);
  });
  t.join();
  line("RESULT", "no_context.current", "%s %s", cu_en(cur), ctx == nullptr ? "none" : "some");
  line("RESULT", "no_context.ordinal", "%s %d", cu_en(attr), ordinal);
  line("RESULT", "no_context.range", "%s base=%s size=%zu", cu_en(range),
       base == dp ? "block-start" : (base == 0 ? "0" : "other"), size);
  line("RESULT", "no_context.free", "%s", cu_en(fr));
  if (fr != CUDA_SUCCESS) CHECK(cudaFree(p));
  // The memory and the allocator are still usable from this thread.
  void* q = nullptr;
  CHECK(cudaMalloc(&q, MiB));
  fill_async(q, MiB, 12);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(q));
}

void free_async() {
  constexpr size_t kBytes = 4 * MiB;
  const size_t nwords = kBytes / 4;
  cudaStream_t reader, writer;
  CHECK(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking));
  unsigned long long *d_sum, *d_expect;
  CHECK(cudaMalloc(&d_sum, sizeof *d_sum));
  CHECK(cudaMalloc(&d_expect, sizeof *d_expect));
  CHECK(cudaMemset(d_sum, 0, sizeof *d_sum));
  CHECK(cudaMemset(d_expect, 0, sizeof *d_expect));
  void* p = nullptr;
  CHECK(cudaMalloc(&p, kBytes));
  fill_async(p, kBytes, 21);
  spin_then_sum<<<1, 256>>>(static_cast<uint32_t*>(p), nwords, 0, d_expect);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  // The reader spins 300 ms before it reads p; the free is queued behind it on its stream.
  spin_then_sum<<<1, 256, 0, reader>>>(static_cast<uint32_t*>(p), nwords, 300000000ull, d_sum);
  CHECK_LAUNCH();
  const double t0 = now_s();
  const cudaError_t fr = cudaFreeAsync(p, reader);
  const double free_ms = (now_s() - t0) * 1e3;
  void* q = nullptr;
  CHECK(cudaMalloc(&q, kBytes));
  fill_async(q, kBytes, 22, writer);
  CHECK(cudaDeviceSynchronize());
  unsigned long long sum = 0, expect = 0;
  CHECK(cudaMemcpy(&sum, d_sum, sizeof sum, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&expect, d_expect, sizeof expect, cudaMemcpyDeviceToHost));
  line("RESULT", "free_async.free", "%s", en(fr));
  line("RESULT", "free_async.reader_saw_old_data", "%s", sum == expect ? "yes" : "NO");
  line("RESULT-SOFT", "free_async.same_address", "%s", q == p ? "yes" : "no");
  line("INFO", "free_async.free_ms", "%.3f", free_ms);
  EXPECT(sum == expect,
         "the block freed with cudaFreeAsync was overwritten while its stream read it");
  if (fr != cudaSuccess) CHECK(cudaFree(p));
  CHECK(cudaFree(q));
  CHECK(cudaFree(d_sum));
  CHECK(cudaFree(d_expect));
  CHECK(cudaStreamDestroy(reader));
  CHECK(cudaStreamDestroy(writer));
}

void relaxed_capture() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* warm = nullptr;  // freed before the capture: the shim serves the first cudaMalloc from it
  CHECK(cudaMalloc(&warm, 2 * MiB));
  CHECK(cudaFree(warm));
  void* out = nullptr;
  CHECK(cudaMalloc(&out, MiB));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  fill_async(out, MiB, 31, s);
  void *a = nullptr, *b = nullptr;
  const cudaError_t ma = cudaMalloc(&a, 2 * MiB);
  const cudaError_t mb = cudaMalloc(&b, 96 * MiB);
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t q1 = cudaStreamIsCapturing(s, &st);
  const cudaError_t fa = a ? cudaFree(a) : cudaSuccess;
  const cudaError_t fb = b ? cudaFree(b) : cudaSuccess;
  cudaStreamCaptureStatus st2 = cudaStreamCaptureStatusNone;
  const cudaError_t q2 = cudaStreamIsCapturing(s, &st2);
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  line("RESULT", "relaxed_capture.malloc", "%s %s", en(ma), en(mb));
  line("RESULT", "relaxed_capture.status_after_malloc", "%s %d", en(q1), static_cast<int>(st));
  line("RESULT", "relaxed_capture.free", "%s %s", en(fa), en(fb));
  line("RESULT", "relaxed_capture.status_after_free", "%s %d", en(q2), static_cast<int>(st2));
  line("RESULT", "relaxed_capture.end", "%s %s", en(end), g ? "graph" : "no-graph");
  if (g != nullptr) {
    cudaGraphExec_t ge = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&ge, g, 0);
    cudaError_t launch = cudaErrorUnknown;
    if (inst == cudaSuccess) {
      for (int i = 0; i < 3; ++i) launch = cudaGraphLaunch(ge, s);
      CHECK(cudaStreamSynchronize(s));
      unsigned long long* d_err;
      CHECK(cudaMalloc(&d_err, sizeof *d_err));
      CHECK(cudaMemset(d_err, 0, sizeof *d_err));
      check_async(out, MiB, 31, d_err);
      unsigned long long bad = 1;
      CHECK(cudaMemcpy(&bad, d_err, sizeof bad, cudaMemcpyDeviceToHost));
      line("RESULT", "relaxed_capture.replayed_data", "%s", bad == 0 ? "ok" : "WRONG");
      CHECK(cudaFree(d_err));
      CHECK(cudaGraphExecDestroy(ge));
    }
    line("RESULT", "relaxed_capture.replay", "%s %s", en(inst), en(launch));
    CHECK(cudaGraphDestroy(g));
  }
  (void)cudaGetLastError();
  CHECK(cudaFree(out));
  CHECK(cudaStreamDestroy(s));
}

struct HostFuncResult {
  cudaError_t malloc_cached = cudaSuccess, malloc_new = cudaSuccess, free_cached = cudaErrorUnknown;
  void* p = nullptr;
  void* big = nullptr;
};

void CUDART_CB alloc_in_callback(void* arg) {
  auto* r = static_cast<HostFuncResult*>(arg);
  r->malloc_cached = cudaMalloc(&r->p, MiB);
  r->malloc_new = cudaMalloc(&r->big, 200 * MiB);
  if (r->p != nullptr) r->free_cached = cudaFree(r->p);
}

void host_func() {
  void* warm = nullptr;
  CHECK(cudaMalloc(&warm, MiB));
  CHECK(cudaFree(warm));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  HostFuncResult r;
  const cudaError_t launch = cudaLaunchHostFunc(s, alloc_in_callback, &r);
  const cudaError_t sync = cudaStreamSynchronize(s);
  line("RESULT", "host_func.launch", "%s %s", en(launch), en(sync));
  // CUDA calls are not allowed in a host function: cudaErrorNotPermitted without the shim. Soft
  // for the cached size: the shim may hand out a cached block (on the H200 cudart refused it
  // first, with and without the shim).
  line("RESULT-SOFT", "host_func.malloc_cached", "%s", en(r.malloc_cached));
  line("RESULT-SOFT", "host_func.free_cached", "%s",
       r.p != nullptr ? en(r.free_cached) : "(nothing allocated)");
  line("RESULT", "host_func.malloc_new", "%s", en(r.malloc_new));
  if (r.big != nullptr) CHECK(cudaFree(r.big));
  (void)cudaGetLastError();
  void* after = nullptr;
  CHECK(cudaMalloc(&after, 3 * MiB));
  fill_async(after, 3 * MiB, 41);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(after));
  CHECK(cudaStreamDestroy(s));
}

void after_free() {
  void* keep = nullptr;  // keeps the segment of p alive under the shim
  void* p = nullptr;
  CHECK(cudaMalloc(&keep, 4096));
  CHECK(cudaMalloc(&p, 4096));
  CHECK(cudaFree(p));
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  (void)cudaGetLastError();
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult r = cuMemGetAddressRange_v2(&base, &size, reinterpret_cast<CUdeviceptr>(p));
  line("RESULT-SOFT", "after_free.attributes", "%s type=%d", en(e), static_cast<int>(a.type));
  // The driver describes freed memory the pool keeps mapped as device memory; only the range is
  // answered by the shim (CUDA_ERROR_NOT_FOUND, as after a real free).
  line("RESULT", "after_free.range", "%s", cu_en(r));
  CHECK(cudaFree(keep));
}

void many_small() {
  constexpr int kCount = 200000;
  constexpr size_t kBytes = 256;
  std::vector<void*> ptrs(kCount, nullptr);
  size_t free0 = 0, total = 0, free1 = 0, free2 = 0;
  CHECK(cudaMemGetInfo(&free0, &total));
  const double t0 = now_s();
  int failed = 0;
  for (int i = 0; i < kCount; ++i) failed += cudaMalloc(&ptrs[i], kBytes) != cudaSuccess;
  const double t1 = now_s();
  CHECK(cudaMemGetInfo(&free1, &total));
  std::vector<void*> sorted(ptrs);
  std::sort(sorted.begin(), sorted.end());
  int overlaps = 0;
  for (size_t i = 1; i < sorted.size(); ++i)
    overlaps += static_cast<char*>(sorted[i - 1]) + kBytes > static_cast<char*>(sorted[i]);
  for (void* p : ptrs) CHECK(cudaFree(p));
  const double t2 = now_s();
  CHECK(cudaMemGetInfo(&free2, &total));
  line("RESULT", "many_small.allocated", "%d of %d failed, %d overlapping", failed, kCount,
       overlaps);
  line("INFO", "many_small.times",
       "alloc %.3f s, free %.3f s; used while live %.1f MiB, free after "
       "minus before %+.1f MiB",
       t1 - t0, t2 - t1, (free0 - free1) / double(MiB),
       (static_cast<double>(free2) - static_cast<double>(free0)) / double(MiB));
  EXPECT(failed == 0 && overlaps == 0, "%d failed, %d overlapping", failed, overlaps);
}

}  // namespace

int main() {
  print_banner("odd_uses");
  no_context();
  free_async();
  relaxed_capture();
  host_func();
  after_free();
  many_small();
  printf("odd_uses: %d failed checks\n", g_fail);
  return g_fail == 0 ? 0 : 1;
}
