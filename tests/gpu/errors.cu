// SPDX-License-Identifier: Apache-2.0
// tests/gpu/errors.cu: error paths and odd uses, run with and without the shim by run.sh.
//
// Output lines (run.sh compares them between the two runs):
//   RESULT key value       must be the same with and without the shim (error codes, attributes)
//   RESULT-SOFT key value  reported when they differ, not a failure
//   INFO key value         measurements and notes (pointers, sizes, counts)
//   CHECK-FAIL where: why  a check that failed in this run (exit status 1)
//
// Sub-tests, in order: cudaMalloc of 0 bytes; of sizes up to SIZE_MAX; double free; free of an
// interior pointer; free of a random device address and of a host pointer; cudaPointerGetAttributes
// and cuMemGetAddressRange (linked directly and through cudaGetDriverEntryPointByVersion) on pooled
// pointers; cudaMemGetInfo while 8 GiB are live and after they are freed (cached blocks count as
// free); allocate 4 GiB chunks until cudaErrorMemoryAllocation, free all, allocate again (4 GiB and
// 6 GiB); graph capture with cudaMallocAsync/cudaFreeAsync inside, replayed 10 times; cudaMalloc
// inside a global-mode capture; fork() after CUDA init (the child tries one cudaMalloc and
// _exit(0)s); cudaDeviceReset, cudaFree of a pointer from before the reset, then more allocation
// work.
//
//   errors        (no arguments; exit 0 when every CHECK passed)
#include <cuda.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "result_lines.h"

namespace {

using result_lines::cu_en;
using result_lines::en;
using result_lines::g_fail;
using result_lines::line;

constexpr size_t MiB = size_t(1) << 20;
constexpr size_t GiB = size_t(1) << 30;

size_t round_up(size_t x, size_t m) {
  return (x + m - 1) / m * m;
}

// RING blocks live at once of sizes from a list, each filled and checked, ranges checked for
// overlap on the host. Returns the number of problems found.
int ring_work(const char* label, long iters, unsigned long long* d_err) {
  const size_t sizes[] = {512, 1 * MiB, 3 * MiB, 8 * MiB, 64 * MiB};
  constexpr int RING = 4;
  struct Live {
    void* p = nullptr;
    size_t size = 0;
    uint32_t seed = 0;
  } ring[RING];
  long overlap = 0;
  CHECK(cudaMemset(d_err, 0, sizeof *d_err));
  for (long i = 0; i < iters; ++i) {
    Live& slot = ring[i % RING];
    if (slot.p) {
      check_async(slot.p, slot.size, slot.seed, d_err);
      CHECK(cudaFree(slot.p));
      slot.p = nullptr;
    }
    size_t size = sizes[(i * 7 + i / 5) % 5];
    void* p = nullptr;
    CHECK(cudaMalloc(&p, size));
    auto a = reinterpret_cast<uintptr_t>(p);
    for (const Live& o : ring) {
      auto b = reinterpret_cast<uintptr_t>(o.p);
      if (o.p && b < a + size && a < b + o.size) ++overlap;
    }
    slot.p = p;
    slot.size = size;
    slot.seed = static_cast<uint32_t>(i * 2654435761u);
    fill_async(p, size, slot.seed);
  }
  for (Live& slot : ring) {
    if (!slot.p) continue;
    check_async(slot.p, slot.size, slot.seed, d_err);
    CHECK(cudaFree(slot.p));
  }
  CHECK(cudaDeviceSynchronize());
  unsigned long long bad = read_counter(d_err);
  line("INFO", label, "%ld pairs, bad words %llu, overlapping live blocks %ld", iters, bad,
       overlap);
  int problems = 0;
  if (bad) ++problems;
  if (overlap) ++problems;
  return problems;
}

// ---- sub-tests ---------------------------------------------------------------------------------

// Sizes no device has, up to SIZE_MAX: rounding them must not wrap to a small block. Each answer
// must be the driver's; a 1 MiB block works afterwards.
void test_malloc_huge() {
  const struct {
    const char* name;
    size_t size;
  } sizes[] = {{"SIZE_MAX", SIZE_MAX},
               {"SIZE_MAX-511", SIZE_MAX - 511},
               {"2^63", size_t(1) << 63},
               {"2^48", size_t(1) << 48},
               {"1TiB+1", (size_t(1) << 40) + 1}};
  for (const auto& s : sizes) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, s.size);
    cudaError_t last = cudaGetLastError();
    line("RESULT", (std::string("malloc_huge_") + s.name).c_str(), "%s ptr=%s last_error=%s", en(e),
         p ? "nonnull" : "null", en(last));
    if (e == cudaSuccess) {
      printf("CHECK-FAIL malloc_huge: %s bytes allocated\n", s.name);
      ++g_fail;
      cudaFree(p);
    }
  }
  void* q = nullptr;
  cudaError_t e = cudaMalloc(&q, MiB);
  line("RESULT", "malloc_after_huge", "%s", en(e));
  if (e == cudaSuccess) CHECK(cudaFree(q));
}

void test_malloc_zero() {
  void* p = reinterpret_cast<void*>(0x1);
  cudaError_t e = cudaMalloc(&p, 0);
  cudaError_t last = cudaGetLastError();
  line("RESULT", "malloc_zero", "%s ptr=%s last_error=%s", en(e),
       p == reinterpret_cast<void*>(0x1) ? "unchanged" : (p ? "nonnull" : "null"), en(last));
  if (e == cudaSuccess && p && p != reinterpret_cast<void*>(0x1)) {
    cudaError_t f = cudaFree(p);
    line("RESULT", "malloc_zero_free", "%s", en(f));
    cudaGetLastError();
  }
  cudaError_t f0 = cudaFree(nullptr);
  line("RESULT", "free_null", "%s", en(f0));
  cudaGetLastError();
}

void test_bad_frees(unsigned long long* d_err) {
  // Double free.
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 1 * MiB));
  CHECK(cudaFree(p));
  cudaError_t e = cudaFree(p);
  cudaError_t last = cudaGetLastError();
  line("RESULT", "double_free", "%s last_error=%s", en(e), en(last));

  // Interior pointer; the block must stay intact and freeable.
  void* q = nullptr;
  CHECK(cudaMalloc(&q, 1 * MiB));
  fill_async(q, 1 * MiB, 77);
  e = cudaFree(static_cast<char*>(q) + 256);
  last = cudaGetLastError();
  line("RESULT", "interior_free", "%s last_error=%s", en(e), en(last));
  CHECK(cudaMemset(d_err, 0, sizeof *d_err));
  check_async(q, 1 * MiB, 77, d_err);
  CHECK(cudaDeviceSynchronize());
  unsigned long long bad = read_counter(d_err);
  EXPECT(bad == 0, "the block whose interior was freed lost its data (%llu bad words)", bad);
  e = cudaFree(q);
  line("RESULT", "interior_free_then_base", "%s", en(e));
  cudaGetLastError();

  // A device-looking address nothing was allocated at, and a host pointer.
  e = cudaFree(reinterpret_cast<void*>(0x7ff0deadbe00ULL));
  last = cudaGetLastError();
  line("RESULT", "random_free", "%s last_error=%s", en(e), en(last));
  void* h = malloc(4096);
  e = cudaFree(h);
  last = cudaGetLastError();
  free(h);
  line("RESULT", "host_pointer_free", "%s last_error=%s", en(e), en(last));

  // Nothing above may leave a sticky error.
  void* r = nullptr;
  CHECK(cudaMalloc(&r, 2 * MiB));
  fill_async(r, 2 * MiB, 3);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(r));
}

using GetRangeFn = CUresult(CUDAAPI*)(CUdeviceptr*, size_t*, CUdeviceptr);

void check_range(const char* how, GetRangeFn fn, const char* label, const void* query,
                 const void* want_base, size_t requested) {
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = fn(&base, &size, reinterpret_cast<CUdeviceptr>(query));
  size_t hi = round_up(requested, 2 * MiB);
  line("INFO", "address_range", "%s %s: %s base=%s size=%zu (requested %zu, allowed %zu..%zu)", how,
       label, cu_en(r), base == reinterpret_cast<CUdeviceptr>(want_base) ? "block-start" : "OTHER",
       size, requested, requested, hi);
  EXPECT(r == CUDA_SUCCESS, "cuMemGetAddressRange (%s) on %s: %s", how, label, cu_en(r));
  EXPECT(base == reinterpret_cast<CUdeviceptr>(want_base),
         "cuMemGetAddressRange (%s) on %s: base %#llx, want the block start %p", how, label,
         static_cast<unsigned long long>(base), want_base);
  EXPECT(size >= requested && size <= hi,
         "cuMemGetAddressRange (%s) on %s: size %zu, want the block's size (%zu..%zu), not the "
         "segment's",
         how, label, size, requested, hi);
}

void test_pointer_attributes() {
  void *a = nullptr, *b = nullptr, *s = nullptr;
  CHECK(cudaMalloc(&a, 3 * MiB));
  CHECK(cudaMalloc(&b, 3 * MiB));
  CHECK(cudaMalloc(&s, 1000));
  char* a100 = static_cast<char*>(a) + 100;

  cudaPointerAttributes attr;
  memset(&attr, 0, sizeof attr);
  cudaError_t e = cudaPointerGetAttributes(&attr, a100);
  line("RESULT", "pointer_attributes", "%s type=%d device=%d devicePointer=%s", en(e),
       int(attr.type), attr.device, attr.devicePointer == a100 ? "same" : "OTHER");
  EXPECT(e == cudaSuccess && attr.type == cudaMemoryTypeDevice && attr.devicePointer == a100,
         "cudaPointerGetAttributes on a pooled pointer");

  GetRangeFn via_entry = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  CHECK(cudaGetDriverEntryPointByVersion(
      "cuMemGetAddressRange", reinterpret_cast<void**>(&via_entry), 12000, cudaEnableDefault, &q));
  EXPECT(q == cudaDriverEntryPointSuccess && via_entry,
         "cudaGetDriverEntryPointByVersion(cuMemGetAddressRange) query result %d", int(q));
  struct {
    const char* how;
    GetRangeFn fn;
  } ways[] = {{"linked", &cuMemGetAddressRange}, {"entry-point", via_entry}};
  for (auto& w : ways) {
    if (!w.fn) continue;
    check_range(w.how, w.fn, "3MiB-block", a, a, 3 * MiB);
    check_range(w.how, w.fn, "3MiB-block+100", a100, a, 3 * MiB);
    check_range(w.how, w.fn, "second-3MiB-block+100", static_cast<char*>(b) + 100, b, 3 * MiB);
    check_range(w.how, w.fn, "1000B-block+10", static_cast<char*>(s) + 10, s, 1000);
  }

  // Also what cuPointerGetAttribute says the range is (not required; a note for the shim).
  CUdeviceptr start = 0;
  size_t rsize = 0;
  CUresult r1 = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      reinterpret_cast<CUdeviceptr>(a100));
  CUresult r2 = cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      reinterpret_cast<CUdeviceptr>(a100));
  line("INFO", "pointer_range_attribute", "%s/%s start=%s size=%zu (3 MiB block)", cu_en(r1),
       cu_en(r2), start == reinterpret_cast<CUdeviceptr>(a) ? "block-start" : "OTHER", rsize);

  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(s));
}

void test_mem_get_info() {
  CHECK(cudaDeviceSynchronize());
  size_t f0 = 0, total = 0, f1 = 0, f2 = 0;
  CHECK(cudaMemGetInfo(&f0, &total));
  std::vector<void*> v;
  for (int i = 0; i < 8; ++i) {
    void* p = nullptr;
    CHECK(cudaMalloc(&p, GiB));
    fill_async(p, 4 * MiB, i);  // touch it
    v.push_back(p);
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemGetInfo(&f1, &total));
  for (void* p : v) CHECK(cudaFree(p));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemGetInfo(&f2, &total));
  line("INFO", "mem_get_info",
       "free before %.1f MiB, with 8 GiB live %.1f MiB, after freeing %.1f "
       "MiB, total %.1f MiB",
       f0 / 1048576.0, f1 / 1048576.0, f2 / 1048576.0, total / 1048576.0);
  EXPECT(f1 + 7 * GiB <= f0, "free did not drop by ~8 GiB while 8 GiB were live");
  EXPECT(f2 + 256 * MiB >= f0,
         "free did not rise back after the frees (%.1f MiB below the start): cached blocks should "
         "count as free",
         (double(f0) - double(f2)) / 1048576.0);
}

void test_oom(unsigned long long* d_err) {
  std::vector<void*> v;
  cudaError_t e = cudaSuccess;
  const size_t chunk = 4 * GiB;
  double t0 = now_s();
  for (int i = 0; i < 100; ++i) {
    void* p = nullptr;
    e = cudaMalloc(&p, chunk);
    if (e != cudaSuccess) break;
    v.push_back(p);
  }
  cudaError_t last = cudaGetLastError();
  cudaError_t last2 = cudaGetLastError();
  line("RESULT", "oom_error", "%s last_error=%s then=%s", en(e), en(last), en(last2));
  line("INFO", "oom_count", "%zu chunks of 4 GiB before the error (%.2f s)", v.size(),
       now_s() - t0);
  EXPECT(e == cudaErrorMemoryAllocation, "allocating 4 GiB chunks ended with %s", en(e));
  EXPECT(!v.empty(), "not even one 4 GiB chunk");
  // The live chunks work.
  if (!v.empty()) {
    CHECK(cudaMemset(d_err, 0, sizeof *d_err));
    fill_async(v.front(), 64 * MiB, 11);
    fill_async(v.back(), 64 * MiB, 12);
    check_async(v.front(), 64 * MiB, 11, d_err);
    check_async(v.back(), 64 * MiB, 12, d_err);
    CHECK(cudaDeviceSynchronize());
    EXPECT(read_counter(d_err) == 0, "data in live chunks at OOM");
  }
  for (void* p : v) CHECK(cudaFree(p));
  CHECK(cudaDeviceSynchronize());
  size_t n_first = v.size();
  v.clear();

  // Allocate again: the same chunk size, then one no cached chunk can serve.
  for (size_t size : {4 * GiB, 6 * GiB}) {
    void* p = nullptr;
    e = cudaMalloc(&p, size);
    line("RESULT", size == 4 * GiB ? "after_oom_alloc_4GiB" : "after_oom_alloc_6GiB", "%s", en(e));
    EXPECT(e == cudaSuccess, "cudaMalloc(%zu) after freeing everything: %s", size, en(e));
    cudaGetLastError();
    if (e == cudaSuccess) {
      CHECK(cudaMemset(d_err, 0, sizeof *d_err));
      fill_async(p, size, 21);
      check_async(p, size, 21, d_err);
      CHECK(cudaDeviceSynchronize());
      EXPECT(read_counter(d_err) == 0, "data in the %zu-byte block after OOM", size);
      CHECK(cudaFree(p));
    }
  }
  // And fill the device again: about as many chunks as the first time.
  for (int i = 0; i < 100; ++i) {
    void* p = nullptr;
    e = cudaMalloc(&p, chunk);
    if (e != cudaSuccess) break;
    v.push_back(p);
  }
  cudaGetLastError();
  line("INFO", "oom_count_again", "%zu chunks (first time %zu), ended with %s", v.size(), n_first,
       en(e));
  EXPECT(v.size() + 1 >= n_first, "only %zu 4 GiB chunks the second time (first time %zu)",
         v.size(), n_first);
  for (void* p : v) CHECK(cudaFree(p));
  CHECK(cudaDeviceSynchronize());
}

__global__ void set_input(uint32_t* in, size_t n, uint32_t r) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) in[i] = static_cast<uint32_t>(i) * 3u + r;
}
__global__ void stage1(uint32_t* tmp, const uint32_t* in, size_t n) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = in[i] * 2u + 1u;
}
__global__ void stage2(uint32_t* out, const uint32_t* tmp, size_t n) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tmp[i] + static_cast<uint32_t>(i);
}
__global__ void verify_out(const uint32_t* out, size_t n, uint32_t r, unsigned long long* err) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t want = (static_cast<uint32_t>(i) * 3u + r) * 2u + 1u + static_cast<uint32_t>(i);
    if (out[i] != want) atomicAdd(err, 1ull);
  }
}

void test_graph(unsigned long long* d_err) {
  int pools = 0;
  CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
  if (!pools) {
    line("INFO", "graph", "skipped: no memory pool support");
    return;
  }
  const size_t n = size_t(1) << 20;
  const unsigned grid = static_cast<unsigned>((n + 255) / 256);
  uint32_t *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, n * 4));
  CHECK(cudaMalloc(&out, n * 4));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaDeviceSynchronize());

  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  uint32_t* tmp = nullptr;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&tmp), n * 4, s));
  stage1<<<grid, 256, 0, s>>>(tmp, in, n);
  CHECK_LAUNCH();
  stage2<<<grid, 256, 0, s>>>(out, tmp, n);
  CHECK_LAUNCH();
  CHECK(cudaFreeAsync(tmp, s));
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  CHECK(cudaMemsetAsync(d_err, 0, sizeof *d_err, s));
  for (uint32_t r = 0; r < 10; ++r) {
    set_input<<<grid, 256, 0, s>>>(in, n, r * 1000u + 7u);
    CHECK_LAUNCH();
    CHECK(cudaGraphLaunch(exec, s));
    verify_out<<<grid, 256, 0, s>>>(out, n, r * 1000u + 7u, d_err);
    CHECK_LAUNCH();
  }
  CHECK(cudaStreamSynchronize(s));
  unsigned long long bad = read_counter(d_err);
  line("INFO", "graph", "10 replays, bad words %llu", bad);
  EXPECT(bad == 0, "graph replays produced %llu wrong words", bad);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
}

// cudaMalloc while a stream captures in global mode: the real runtime refuses it (and invalidates
// the capture); a pool that serves it from its cache without asking the driver may not.
void test_capture_malloc() {
  // Make sure a 1 MiB block is cached (if a pool is in front).
  void* warm = nullptr;
  CHECK(cudaMalloc(&warm, 1 * MiB));
  CHECK(cudaFree(warm));
  CHECK(cudaDeviceSynchronize());

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint32_t* buf = nullptr;
  CHECK(cudaMalloc(&buf, 4096));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  set_input<<<4, 256, 0, s>>>(buf, 1024, 1);
  void* p = nullptr;
  cudaError_t e1 = cudaMalloc(&p, 1 * MiB);
  cudaGraph_t g = nullptr;
  cudaError_t e2 = cudaStreamEndCapture(s, &g);
  cudaError_t last = cudaGetLastError();
  line("RESULT-SOFT", "capture_global_malloc", "malloc=%s end_capture=%s graph=%s", en(e1), en(e2),
       g ? "yes" : "no");
  (void)last;
  if (g) CHECK(cudaGraphDestroy(g));
  if (e1 == cudaSuccess && p) {
    cudaError_t f = cudaFree(p);
    line("INFO", "capture_global_malloc_free", "%s", en(f));
    cudaGetLastError();
  }
  // The stream works afterwards.
  set_input<<<4, 256, 0, s>>>(buf, 1024, 2);
  CHECK_LAUNCH();
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(buf));
}

void test_fork(unsigned long long* d_err) {
  // Leave a cached block and a live one behind, as a real program would.
  void* keep = nullptr;
  void* cached = nullptr;
  CHECK(cudaMalloc(&keep, 1 * MiB));
  CHECK(cudaMalloc(&cached, 1 * MiB));
  CHECK(cudaFree(cached));
  CHECK(cudaDeviceSynchronize());
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    EXPECT(false, "fork failed");
    CHECK(cudaFree(keep));
    return;
  }
  if (pid == 0) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, 1 * MiB);
    char msg[256];
    int len = snprintf(msg, sizeof msg, "INFO fork_child_malloc %s ptr=%s\n", cudaGetErrorName(e),
                       p ? "nonnull" : "null");
    if (len > 0) {
      ssize_t w = write(1, msg, static_cast<size_t>(len));
      (void)w;
    }
    _exit(0);
  }
  int status = 0;
  bool done = false;
  double t0 = now_s();
  while (now_s() - t0 < 30.0) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      done = true;
      break;
    }
    usleep(10000);
  }
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    EXPECT(false, "the forked child did not exit within 30 s (killed)");
  } else if (WIFSIGNALED(status)) {
    EXPECT(false, "the forked child died of signal %d", WTERMSIG(status));
  } else {
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child exited with %d",
           WEXITSTATUS(status));
  }
  line("INFO", "fork_child", "%s after %.2f s",
       !done ? "hung" : (WIFSIGNALED(status) ? "signaled" : "exited"), now_s() - t0);
  // The parent carries on.
  CHECK(cudaFree(keep));
  EXPECT(ring_work("after_fork_work", 200, d_err) == 0, "allocation work after fork");
}

void test_device_reset() {
  // Leave cached blocks of several sizes and one live block behind.
  void* keep = nullptr;
  CHECK(cudaMalloc(&keep, 1 * MiB));
  fill_async(keep, 1 * MiB, 5);
  for (size_t size : {size_t(512), 1 * MiB, 3 * MiB, 64 * MiB}) {
    void* p = nullptr;
    CHECK(cudaMalloc(&p, size));
    fill_async(p, size, 6);
    CHECK(cudaFree(p));
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaDeviceReset());
  // Every allocation of the old context is gone: freeing one is an error.
  cudaError_t e = cudaFree(keep);
  cudaError_t last = cudaGetLastError();
  line("RESULT", "free_after_device_reset", "%s last_error=%s", en(e), en(last));
  unsigned long long* d_err = nullptr;
  CHECK(cudaMalloc(&d_err, sizeof *d_err));
  EXPECT(ring_work("after_reset_work", 2000, d_err) == 0, "allocation work after cudaDeviceReset");
  CHECK(cudaFree(d_err));
  CHECK(cudaDeviceSynchronize());
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  print_banner("errors");
  unsigned long long* d_err = nullptr;
  CHECK(cudaMalloc(&d_err, sizeof *d_err));
  CHECK(cudaMemset(d_err, 0, sizeof *d_err));

  struct {
    const char* name;
    void (*fn)(unsigned long long*);
  } tests[] = {
      {"malloc_zero", [](unsigned long long*) { test_malloc_zero(); }},
      {"malloc_huge", [](unsigned long long*) { test_malloc_huge(); }},
      {"bad_frees", test_bad_frees},
      {"pointer_attributes", [](unsigned long long*) { test_pointer_attributes(); }},
      {"mem_get_info", [](unsigned long long*) { test_mem_get_info(); }},
      {"oom", test_oom},
      {"graph", test_graph},
      {"capture_malloc", [](unsigned long long*) { test_capture_malloc(); }},
      {"fork", test_fork},
  };
  for (auto& t : tests) {
    int before = g_fail;
    double t0 = now_s();
    t.fn(d_err);
    printf("SUBTEST %s %s (%.2f s)\n", t.name, g_fail == before ? "ok" : "FAILED", now_s() - t0);
    fflush(stdout);
  }
  CHECK(cudaFree(d_err));
  {
    int before = g_fail;
    double t0 = now_s();
    test_device_reset();
    printf("SUBTEST device_reset %s (%.2f s)\n", g_fail == before ? "ok" : "FAILED", now_s() - t0);
  }
  printf("errors: %d checks failed\n", g_fail);
  return g_fail ? 1 : 0;
}
