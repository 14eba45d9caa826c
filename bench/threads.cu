// SPDX-License-Identifier: Apache-2.0
// bench/threads.cu: allocation throughput from several host threads at once. For each thread
// count, every thread does cudaMalloc+cudaFree pairs of one size (default 1 MiB) for a fixed time;
// prints the total pairs per second. Run by bench/run_gpu_bench.sh without and with the shim.
// With --async every thread uses cudaMallocAsync+cudaFreeAsync on a non-blocking stream of its
// own, from the device's default pool (release threshold UINT64_MAX): the anchor. With --driver
// every thread calls cuMemAlloc_v2+cuMemFree_v2 (linked with -lcuda): the shim without cudart.
// --stream per-thread|nonblocking: every thread has that stream (its per-thread default stream,
// or a non-blocking stream of its own) and, with --work, puts a small kernel that writes the
// block on it before each free (work the reuse fences must follow; built with --default-stream
// per-thread, "per-thread" is also where a plain launch goes).
//
//   threads [--async | --driver] [--stream per-thread|nonblocking] [--work] [--seconds S]
//           [--size BYTES] [--threads 1,4,16]
//
// One line per thread count: threads=N pairs=P seconds=S pairs_per_s=R
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../tests/gpu/common.h"  // CHECK, shim_loaded

namespace {

using clk = std::chrono::steady_clock;

__global__ void touch(unsigned* p) {
  if (threadIdx.x == 0) p[0] += 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool async = false;
  bool driver = false;
  std::string stream_kind = "legacy";
  bool work = false;
  double seconds = 2.0;
  size_t size = size_t(1) << 20;
  std::vector<int> counts = {1, 4, 16};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--async") {
      async = true;
    } else if (a == "--driver") {
      driver = true;
    } else if (a == "--stream" && i + 1 < argc) {
      stream_kind = argv[++i];
    } else if (a == "--work") {
      work = true;
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (a == "--size" && i + 1 < argc) {
      size = static_cast<size_t>(strtoull(argv[++i], nullptr, 10));
    } else if (a == "--threads" && i + 1 < argc) {
      counts.clear();
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos < list.size()) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos) end = list.size();
        counts.push_back(atoi(list.substr(pos, end - pos).c_str()));
        pos = end + 1;
      }
    } else {
      fprintf(
          stderr,
          "usage: threads [--async | --driver] [--stream per-thread|nonblocking] [--work] "
          "[--seconds S] [--size BYTES] [--threads 1,4,16]\n");
      return 2;
    }
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  if (async) {
    cudaMemPool_t mem_pool;
    CHECK(cudaDeviceGetDefaultMemPool(&mem_pool, 0));
    uint64_t threshold = UINT64_MAX;
    CHECK(cudaMemPoolSetAttribute(mem_pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  const char* conf = getenv("CUDAPOOL_CONF");
  printf("threads: api %s, stream %s%s, size %zu, %.1f s per count, shim %s, CUDAPOOL_CONF=%s\n",
         async    ? "async"
         : driver ? "driver"
                  : "malloc",
         stream_kind.c_str(), work ? " with a kernel per pair" : "", size, seconds,
         shim_loaded() ? "loaded" : "not-loaded", conf ? conf : "(unset)");
  fflush(stdout);

  for (int n : counts) {
    if (n < 1) continue;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<long> total{0};
    clk::time_point deadline;
    std::vector<std::thread> pool;
    for (int t = 0; t < n; ++t) {
      pool.emplace_back([&] {
        CHECK(cudaSetDevice(0));
        cudaStream_t stream = nullptr;
        if (async || stream_kind == "nonblocking") {
          CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        } else if (stream_kind == "per-thread") {
          stream = cudaStreamPerThread;
        }
        auto pair = [&] {
          void* p = nullptr;
          if (async) {
            CHECK(cudaMallocAsync(&p, size, stream));
            CHECK(cudaFreeAsync(p, stream));
          } else if (driver) {
            CUdeviceptr d = 0;
            if (cuMemAlloc(&d, size) != CUDA_SUCCESS || cuMemFree(d) != CUDA_SUCCESS) {
              fprintf(stderr, "cuMemAlloc/cuMemFree failed\n");
              exit(1);
            }
          } else {
            CHECK(cudaMalloc(&p, size));
            if (work) touch<<<1, 32, 0, stream>>>(static_cast<unsigned*>(p));
            CHECK(cudaFree(p));
          }
        };
        // One pair before the clock starts (thread-local runtime state).
        pair();
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        long mine = 0;
        for (;;) {
          for (int i = 0; i < 16; ++i) pair();
          mine += 16;
          if (clk::now() >= deadline) break;
        }
        if (async || stream_kind == "nonblocking") {
          CHECK(cudaStreamSynchronize(stream));
          CHECK(cudaStreamDestroy(stream));
        } else if (work) {
          CHECK(cudaStreamSynchronize(stream));
        }
        total.fetch_add(mine);
      });
    }
    while (ready.load() < n) std::this_thread::yield();
    auto t0 = clk::now();
    deadline =
        t0 + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(seconds));
    go.store(true);
    for (auto& th : pool) th.join();
    double secs = std::chrono::duration<double>(clk::now() - t0).count();
    printf("threads=%d pairs=%ld seconds=%.3f pairs_per_s=%.0f\n", n, total.load(), secs,
           total.load() / secs);
    fflush(stdout);
  }
  return 0;
}
