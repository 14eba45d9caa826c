// SPDX-License-Identifier: Apache-2.0
// bench/alloc_latency.cu: time per cudaMalloc+cudaFree pair (or cudaMallocAsync+cudaFreeAsync on
// one stream with --async), per size, on an idle GPU. Run by bench/run_gpu_bench.sh without the
// shim and under it with several settings.
//
//   alloc_latency [--async | --driver] [--budget-s S] [--max-iters N] [--sizes B,B,...]
//                 [--hold B]
//
// Per size: 3 warm-up pairs, 5 pairs to estimate the cost, then batches of pairs (a batch lasts
// about 20 us, at most 1000 pairs) until the budget (default 1 s) or --max-iters (default 200000)
// pairs; a size stops early after 3x the budget. Prints one line per size:
//   size=BYTES api=malloc|async|driver iters=N batch=B median_ns=X mean_ns=Y min_ns=Z
// median_ns is the median over batches of the batch's time per pair. With --async the device's
// default memory pool keeps freed memory (release threshold UINT64_MAX), as PyTorch's
// cudaMallocAsync backend does. With --driver the pair is cuMemAlloc_v2+cuMemFree_v2 called
// through the pointers cudaGetDriverEntryPointByVersion hands out (the shim's hooks when it is
// loaded): the same pool work without cudart's own bookkeeping around it. With --hold one block of
// B bytes is allocated before the first size and freed after the last: the driver's cost for small
// sizes depends on whether other memory is live (docs/benchmarks.md, "raw with a live block").
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../tests/gpu/common.h"  // CHECK, shim_loaded

namespace {

using clk = std::chrono::steady_clock;

double ns_since(clk::time_point t0) {
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count();
}

struct Result {
  long iters = 0, batch = 0;
  double median = 0, mean = 0, min = 0;
};

enum class Api { kMalloc, kAsync, kDriver };
const char* api_name(Api api) {
  return api == Api::kAsync ? "async" : api == Api::kDriver ? "driver" : "malloc";
}

using MemAllocFn = CUresult (*)(CUdeviceptr*, size_t);
using MemFreeFn = CUresult (*)(CUdeviceptr);
MemAllocFn g_mem_alloc = nullptr;
MemFreeFn g_mem_free = nullptr;

void check_driver(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "CUDA driver error %d in %s\n", static_cast<int>(r), what);
    exit(1);
  }
}

Result measure(size_t size, Api api, cudaStream_t s, double budget_s, long max_iters) {
  const bool async = api == Api::kAsync;
  auto pair = [&] {
    void* p = nullptr;
    if (api == Api::kDriver) {
      CUdeviceptr d = 0;
      check_driver(g_mem_alloc(&d, size), "cuMemAlloc_v2");
      check_driver(g_mem_free(d), "cuMemFree_v2");
    } else if (async) {
      CHECK(cudaMallocAsync(&p, size, s));
      CHECK(cudaFreeAsync(p, s));
    } else {
      CHECK(cudaMalloc(&p, size));
      CHECK(cudaFree(p));
    }
  };
  for (int i = 0; i < 3; ++i) pair();
  if (async) CHECK(cudaStreamSynchronize(s));
  auto t0 = clk::now();
  for (int i = 0; i < 5; ++i) pair();
  double est = std::max(1.0, ns_since(t0) / 5);
  Result r;
  r.batch = std::clamp(static_cast<long>(20000.0 / est), 1L, 1000L);
  long target = std::clamp(static_cast<long>(budget_s * 1e9 / est), 20L, std::max(20L, max_iters));
  long nb = std::max(1L, target / r.batch);
  std::vector<double> per;
  per.reserve(static_cast<size_t>(nb));
  auto start = clk::now();
  for (long b = 0; b < nb; ++b) {
    auto tb = clk::now();
    for (long i = 0; i < r.batch; ++i) pair();
    per.push_back(ns_since(tb) / static_cast<double>(r.batch));
    if (per.size() >= 5 && ns_since(start) > 3 * budget_s * 1e9) break;
  }
  if (async) CHECK(cudaStreamSynchronize(s));
  r.iters = static_cast<long>(per.size()) * r.batch;
  double sum = 0;
  for (double v : per) sum += v;
  r.mean = sum / static_cast<double>(per.size());
  std::sort(per.begin(), per.end());
  r.min = per.front();
  size_t n = per.size();
  r.median = n % 2 ? per[n / 2] : (per[n / 2 - 1] + per[n / 2]) / 2;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Api api = Api::kMalloc;
  double budget_s = 1.0;
  long max_iters = 200000;
  size_t hold_bytes = 0;
  std::vector<size_t> sizes = {512, size_t(1) << 20, size_t(8) << 20, size_t(64) << 20,
                               size_t(1) << 30};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--async") {
      api = Api::kAsync;
    } else if (a == "--driver") {
      api = Api::kDriver;
    } else if (a == "--budget-s" && i + 1 < argc) {
      budget_s = atof(argv[++i]);
    } else if (a == "--max-iters" && i + 1 < argc) {
      max_iters = atol(argv[++i]);
    } else if (a == "--hold" && i + 1 < argc) {
      hold_bytes = static_cast<size_t>(strtoull(argv[++i], nullptr, 10));
    } else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos < list.size()) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos) end = list.size();
        sizes.push_back(
            static_cast<size_t>(strtoull(list.substr(pos, end - pos).c_str(), nullptr, 10)));
        pos = end + 1;
      }
    } else {
      fprintf(stderr,
              "usage: alloc_latency [--async | --driver] [--budget-s S] [--max-iters N] [--sizes "
              "B,...] [--hold B]\n");
      return 2;
    }
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  cudaStream_t s = nullptr;
  if (api == Api::kDriver) {
    cudaDriverEntryPointQueryResult found{};
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAlloc", reinterpret_cast<void**>(&g_mem_alloc),
                                           12000, cudaEnableDefault, &found));
    CHECK(cudaGetDriverEntryPointByVersion("cuMemFree", reinterpret_cast<void**>(&g_mem_free),
                                           12000, cudaEnableDefault, &found));
    if (g_mem_alloc == nullptr || g_mem_free == nullptr) {
      fprintf(stderr, "cudaGetDriverEntryPoint found no cuMemAlloc/cuMemFree\n");
      return 1;
    }
  }
  if (api == Api::kAsync) {
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    uint64_t threshold = UINT64_MAX;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  void* held = nullptr;
  if (hold_bytes > 0) CHECK(cudaMalloc(&held, hold_bytes));
  const char* conf = getenv("CUDAPOOL_CONF");
  printf("alloc_latency: api %s, shim %s, CUDAPOOL_CONF=%s, budget %.2f s per size, held %zu B\n",
         api_name(api), shim_loaded() ? "loaded" : "not-loaded", conf ? conf : "(unset)", budget_s,
         hold_bytes);
  fflush(stdout);
  for (size_t size : sizes) {
    Result r = measure(size, api, s, budget_s, max_iters);
    printf("size=%zu api=%s iters=%ld batch=%ld median_ns=%.1f mean_ns=%.1f min_ns=%.1f\n", size,
           api_name(api), r.iters, r.batch, r.median, r.mean, r.min);
    fflush(stdout);
  }
  if (held != nullptr) CHECK(cudaFree(held));
  if (s) CHECK(cudaStreamDestroy(s));
  return 0;
}
