#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/torch_raw_alloc.py: time per allocation+free pair of PyTorch's own CUDA caching allocator,
measured in C++ (c10::cuda::CUDACachingAllocator::raw_alloc + raw_delete in a loop, std::chrono),
so that Python does not count. The same method and output as bench/alloc_latency.cu:

  size=BYTES api=torch iters=N batch=B median_ns=X mean_ns=Y min_ns=Z

  torch_raw_alloc.py [--build-dir DIR] [--budget-s S] [--max-iters N] [--sizes B,B,...]
  torch_raw_alloc.py --threads 1,4,16 [--size BYTES] [--seconds S]

With --threads, the method and output of bench/threads.cu instead: every thread does raw_alloc +
raw_delete pairs of one size for a fixed time; one line per thread count:

  threads=N pairs=P seconds=S pairs_per_s=R

The extension is built once with torch.utils.cpp_extension.load_inline into --build-dir
(default $WORK/torch-ext, WORK defaulting to /tmp/cudapool-bench) and reused. Run it without the
shim and without PYTORCH_NO_CUDA_MEMORY_CACHING (the script removes that variable)."""
import argparse
import hashlib
import os
import sys
import time

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

// Total raw_alloc+raw_delete pairs of `size` bytes that n threads do in `seconds`:
// {pairs, seconds}. Each thread does one pair before the clock starts.
std::vector<double> threads(int64_t n, int64_t size, double seconds) {
  namespace alloc = c10::cuda::CUDACachingAllocator;
  using clk = std::chrono::steady_clock;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<long> total{0};
  clk::time_point deadline;
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < n; ++t) {
    pool.emplace_back([&] {
      c10::cuda::set_device(0);
      alloc::raw_delete(alloc::raw_alloc(static_cast<size_t>(size)));
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      long mine = 0;
      for (;;) {
        for (int i = 0; i < 16; ++i) alloc::raw_delete(alloc::raw_alloc(static_cast<size_t>(size)));
        mine += 16;
        if (clk::now() >= deadline) break;
      }
      total.fetch_add(mine);
    });
  }
  while (ready.load() < n) std::this_thread::yield();
  auto t0 = clk::now();
  deadline = t0 + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(seconds));
  go.store(true);
  for (auto& th : pool) th.join();
  double secs = std::chrono::duration<double>(clk::now() - t0).count();
  return {static_cast<double>(total.load()), secs};
}

// Per size: {median, mean, min ns per pair, pairs timed, batch}; the method of alloc_latency.cu.
std::vector<std::vector<double>> bench(std::vector<int64_t> sizes, double budget_s,
                                       int64_t max_iters) {
  namespace alloc = c10::cuda::CUDACachingAllocator;
  using clk = std::chrono::steady_clock;
  auto ns_since = [](clk::time_point t0) {
    return std::chrono::duration<double, std::nano>(clk::now() - t0).count();
  };
  std::vector<std::vector<double>> out;
  for (int64_t size : sizes) {
    TORCH_CHECK(size > 0, "bench: size ", size);
    const size_t n = static_cast<size_t>(size);
    auto pair = [n] {
      void* p = alloc::raw_alloc(n);
      alloc::raw_delete(p);
    };
    for (int i = 0; i < 3; ++i) pair();
    auto t0 = clk::now();
    for (int i = 0; i < 5; ++i) pair();
    double est = std::max(1.0, ns_since(t0) / 5);
    int64_t batch = std::clamp<int64_t>(static_cast<int64_t>(20000.0 / est), 1, 1000);
    int64_t target = std::clamp<int64_t>(static_cast<int64_t>(budget_s * 1e9 / est), 20,
                                         std::max<int64_t>(20, max_iters));
    int64_t nb = std::max<int64_t>(1, target / batch);
    std::vector<double> per;
    per.reserve(static_cast<size_t>(nb));
    auto start = clk::now();
    for (int64_t b = 0; b < nb; ++b) {
      auto tb = clk::now();
      for (int64_t i = 0; i < batch; ++i) pair();
      per.push_back(ns_since(tb) / static_cast<double>(batch));
      if (per.size() >= 5 && ns_since(start) > 3 * budget_s * 1e9) break;
    }
    double sum = 0;
    for (double v : per) sum += v;
    double mean = sum / static_cast<double>(per.size());
    std::sort(per.begin(), per.end());
    size_t k = per.size();
    double median = k % 2 ? per[k / 2] : (per[k / 2 - 1] + per[k / 2]) / 2;
    out.push_back({median, mean, per.front(), static_cast<double>(per.size() * batch),
                   static_cast<double>(batch)});
  }
  return out;
}
"""


def main():
    work = os.environ.get("WORK") or "/tmp/cudapool-bench"
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(work, "torch-ext"))
    ap.add_argument("--budget-s", type=float, default=1.0)
    ap.add_argument("--max-iters", type=int, default=200000)
    ap.add_argument("--sizes", default="512,1048576,8388608,67108864,1073741824")
    ap.add_argument("--threads", default="", help="thread counts, e.g. 1,4,16 (threads mode)")
    ap.add_argument("--size", type=int, default=1 << 20, help="bytes per pair (threads mode)")
    ap.add_argument("--seconds", type=float, default=2.0, help="seconds per count (threads mode)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]

    os.environ.pop("PYTORCH_NO_CUDA_MEMORY_CACHING", None)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # host code only; skips the arch probe
    os.makedirs(args.build_dir, exist_ok=True)
    stale = os.path.join(args.build_dir, "lock")  # left by a killed build: would wait for ever
    if os.path.exists(stale):
        os.remove(stale)

    import torch
    from torch.utils.cpp_extension import load_inline

    if not torch.cuda.is_available():
        print("torch_raw_alloc: torch.cuda.is_available() is False")
        return 1
    t0 = time.time()
    digest = hashlib.sha1(CPP_SOURCE.encode()).hexdigest()[:12]
    ext = load_inline(
        name="cudapool_bench_raw_alloc_" + digest,
        cpp_sources=[CPP_SOURCE],
        functions=["bench", "threads"],
        with_cuda=True,
        extra_cflags=["-O2"],
        build_directory=args.build_dir,
        verbose=args.verbose,
    )
    torch.cuda.init()
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")  # the allocator and the context exist before timing
    print("torch_raw_alloc: torch %s, allocator backend %s, extension ready in %.1f s"
          % (torch.__version__, torch.cuda.get_allocator_backend(), time.time() - t0))
    sys.stdout.flush()
    if args.threads:
        for n in [int(c) for c in args.threads.split(",") if c]:
            pairs, secs = ext.threads(n, args.size, args.seconds)
            print("threads=%d pairs=%d seconds=%.3f pairs_per_s=%.0f" % (n, pairs, secs, pairs / secs))
            sys.stdout.flush()
        return 0
    for size in sizes:  # one call per size, so each line appears as soon as it is measured
        median, mean, mn, iters, batch = ext.bench([size], args.budget_s, args.max_iters)[0]
        print("size=%d api=torch iters=%d batch=%d median_ns=%.1f mean_ns=%.1f min_ns=%.1f"
              % (size, iters, batch, median, mean, mn))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
