// SPDX-License-Identifier: Apache-2.0
// bench/training_log/process.h: the simulated process that runs the training loop (workload.h)
// under the shim and writes the log the shim would write: its allocations go through the
// project's own pool (pool::DevicePool on a SimulatedBackend the size of an H200, segments placed
// the driver's way), its pool's events become log lines through the log's own formatter
// (log/format.h), with the shim's fields: seq, a CLOCK_MONOTONIC-like t_ns, the thread, latency_ns
// of each call, cache_hit, and with backtrace frames the call site's return addresses (the shim's
// CUDAPOOL_BACKTRACE). The header is the shim's (its options from the conf string), the summary
// line the pool's statistics, the blocks still allocated (the kept tensors) with their frames
// named, and the modules: so cudapool-replay of the log reproduces its summary. With
// requests_only, only alloc and free_requested lines with the request's fields (no pool decisions,
// like examples/logs/training-loop.jsonl); the pool still makes the pointers, in the address
// range of the replay's first pool, so a replay reproduces the summary there too.
// Time is simulated: a mean gap between calls, the cost of each call (a cudaMalloc of a segment
// much more than a cache hit), and the idle time the workload asks for. Not here: what is
// allocated (workload.h), the output file (output.h).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/training_log/call_sites.h"
#include "bench/training_log/output.h"
#include "bench/training_log/random.h"
#include "bench/training_log/workload.h"
#include "config/parse.h"
#include "pool/device_pool.h"
#include "pool/simulated_backend.h"

namespace cudapool::bench {

struct ProcessSettings {
  std::string conf;  // the pool's settings string (written as the header's conf)
  bool requests_only = false;
  int backtrace = 0;       // return addresses per alloc event, 0 to log::kMaxBacktrace
  std::uint64_t seed = 1;  // of the simulated clock's jitter
  std::string version;     // the header's version and argv
  std::vector<std::string> argv;
};

// The simulated device: an H200's memory, as its driver reports it.
inline constexpr std::uint64_t kDeviceMemory = 150109880320;
inline constexpr const char* kDeviceName = "NVIDIA H200";

class SimulatedProcess final : public Program, private pool::EventSink {
 public:
  // Writes the header line. parsed: settings.conf parsed, without diagnostics.
  SimulatedProcess(const ProcessSettings& settings, const config::ParseResult& parsed, Output& out);
  std::uintptr_t alloc(std::size_t bytes, Site site, Thread thread, Lifetime lifetime) override;
  void free(std::uintptr_t ptr, Thread thread) override;
  void idle(std::uint64_t ns) override { now_ += ns; }
  void library_stream(Thread thread) override;
  // Writes the summary line, as the shim does at a normal exit.
  void finish();
  std::uint64_t events() const { return seq_; }

 private:
  std::uint64_t on_pool_event(const pool::PoolEvent& event) override;
  void write_request(const log::LogRecord& r);  // a requests-only line
  std::uint64_t tid(Thread thread) const { return thread == Thread::kMain ? kPid : kPid + 41; }

  static constexpr std::uint64_t kPid = 4242;
  ProcessSettings settings_;
  Output& out_;
  CallSites sites_;
  Random rng_;
  pool::SimulatedBackend backend_;
  pool::DevicePool pool_;
  std::uint64_t seq_ = 0, now_ = 0, call_start_ = 0;
  Thread thread_ = Thread::kMain;  // of the call in progress
  Site site_ = Site::kWeight;
  std::uint64_t alloc_seq_ = 0, alloc_t_ns_ = 0;  // of the last alloc event
  // The kept blocks' alloc events (the summary's leaks): their seq, time, thread and site.
  struct Kept {
    std::uint64_t seq, t_ns, tid;
    Site site;
  };
  std::unordered_map<std::uintptr_t, Kept> kept_;
};

}  // namespace cudapool::bench
