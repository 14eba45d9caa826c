// SPDX-License-Identifier: Apache-2.0
// bench/pool_pair.cpp: the pool's own cost, on a CPU: one malloc+free pair of one size, repeated
// (the pattern of bench/alloc_latency.cu: one block live at a time, always a cache hit), for the
// sizes of the GPU table, through DevicePool with a simulated device and no event sink. The shim's
// pair on the GPU is this plus the hook, the lock and the driver calls around it. A benchmark,
// never a test: run `build-release/bench/pool_pair [PAIRS]`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config/options.h"
#include "pool/device_pool.h"
#include "pool/simulated_backend.h"

namespace {

using clk = std::chrono::steady_clock;

// Median over rounds of the time per pair of one round.
double pair_ns(std::size_t size, long pairs) {
  cudapool::config::Options options;
  cudapool::pool::SimulatedBackend backend(80ull << 30);
  cudapool::pool::DevicePool pool(options, backend, 0, nullptr);
  pool.free(pool.malloc(size).ptr);  // the segment, once
  std::vector<double> rounds;
  const long per_round = std::max(1L, pairs / 15);
  for (int round = 0; round < 15; ++round) {
    const auto t0 = clk::now();
    for (long i = 0; i < per_round; ++i) pool.free(pool.malloc(size).ptr);
    rounds.push_back(std::chrono::duration<double, std::nano>(clk::now() - t0).count() /
                     static_cast<double>(per_round));
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 3000000;
  for (std::size_t size : {std::size_t{512}, std::size_t{1} << 20, std::size_t{8} << 20,
                           std::size_t{64} << 20, std::size_t{1} << 30}) {
    std::printf("size=%zu pool_pair_median_ns=%.1f\n", size, pair_ns(size, pairs));
  }
  return 0;
}
