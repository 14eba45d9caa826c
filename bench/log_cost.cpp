// SPDX-License-Identifier: Apache-2.0
// bench/log_cost.cpp: what the allocation log costs, on a CPU: the pool's alloc+free pair with no
// sink and with the Logger as its sink (4 events per pair: alloc, free_requested, free_completed,
// and a segment event now and then), and the events per second a burst of appends sustains through
// the writer thread into a file. A benchmark, never a test: run `build/bench/log_cost [DIR [EXT]]`
// (EXT `.zst` or `.gz`: the logs written compressed, log/compression.h).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "config/options.h"
#include "log/logger.h"
#include "pool/device_pool.h"
#include "pool/simulated_backend.h"

namespace {

using clk = std::chrono::steady_clock;

double pair_ns(cudapool::pool::EventSink* sink, int pairs) {
  cudapool::config::Options options;
  cudapool::pool::SimulatedBackend backend(80ull << 30);
  cudapool::pool::DevicePool pool(options, backend, 0, sink);
  std::vector<std::uintptr_t> live(64);
  for (auto& p : live) p = pool.malloc(1 << 20).ptr;
  const auto t0 = clk::now();
  for (int i = 0; i < pairs; ++i) {
    auto& p = live[static_cast<std::size_t>(i) & 63];
    pool.free(p);
    p = pool.malloc(1 << 20).ptr;
  }
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / pairs;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/tmp";
  const std::string ext = argc > 2 ? argv[2] : "";
  const auto env = [](const char* name) { return std::getenv(name); };
  const int pairs = 2000000;
  cudapool::log::HeaderInfo header;
  header.version = "bench";

  const double bare = pair_ns(nullptr, pairs);
  cudapool::log::Logger* logger =
      cudapool::log::Logger::start(dir + "/cudapool-log-cost-%p.jsonl" + ext, header, env);
  if (logger == nullptr) return 1;
  const double logged = pair_ns(logger, pairs);
  logger->finish(cudapool::log::Summary{});
  std::remove(logger->path().c_str());

  // A burst: 4 threads append as fast as they can.
  cudapool::log::Logger* burst =
      cudapool::log::Logger::start(dir + "/cudapool-log-burst-%p.jsonl" + ext, header, env);
  if (burst == nullptr) return 1;
  const int per_thread = 2000000;
  const auto t0 = clk::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      cudapool::log::LogRecord r;
      r.action = cudapool::log::LogAction::kAlloc;
      r.size = 4096;
      for (int i = 0; i < per_thread; ++i) {
        r.ptr = static_cast<std::uint64_t>(i) * 512;
        burst->append(r);
      }
    });
  }
  for (auto& t : threads) t.join();
  burst->finish(cudapool::log::Summary{});
  const double seconds = std::chrono::duration<double>(clk::now() - t0).count();
  const auto c = burst->counters();
  std::remove(burst->path().c_str());

  std::printf("| measure | value |\n| --- | --- |\n");
  std::printf("| pool alloc+free pair, no log | %.1f ns |\n", bare);
  std::printf("| pool alloc+free pair, logged (3 events) | %.1f ns |\n", logged);
  std::printf("| cost per logged event | %.1f ns |\n", (logged - bare) / 3.0);
  std::printf("| burst: events written | %llu of %d |\n",
              static_cast<unsigned long long>(c.written), 4 * per_thread);
  std::printf("| burst: events per second sustained (4 threads, file) | %.2f M |\n",
              4.0 * per_thread / seconds / 1e6);
  std::printf("| burst: appends that waited for room | %llu |\n",
              static_cast<unsigned long long>(c.producer_waits));
  return c.written == static_cast<std::uint64_t>(4 * per_thread) ? 0 : 1;
}
