// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/replay_fuzz.cpp: the libFuzzer target for the replay's log parser and event handling
// (tools/replay/). Any bytes are a whole log, replayed in memory the three ways the tools do:
// (1) as cudapool-replay reads a file (Replayer::feed_stream, then both reports), (2) line by
// line (for_each_line, Replayer::feed) with every pool checked after each of the first lines, and
// (3) read once and replayed (read_log, Replayer::replay: cudapool tune). None may crash, and
// every promise must hold: each pool's invariants (pool/invariants.h) and its simulated device
// used consistently (SimulatedBackend::misuse() 0); no block at address 0, wrapping past 2^64 or
// overlapping another of its pool; at most kMaxPools pools; the counts add up to the lines read;
// the three replays give the same counts and statistics. Memory is bounded by libFuzzer's
// -rss_limit_mb (tests/fuzz/run.sh). A broken promise aborts with the reason (libFuzzer keeps the
// input). Not a unit test: those are tests/unit/test_replay*.cpp; run by tests/fuzz/run.sh.
// fuzz-links: cudapool_replay_lib cudapool_pool cudapool_config cudapool_log
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "log/read/line_reader.h"
#include "pool/invariants.h"
#include "pool/stats.h"
#include "tools/replay/recorded_log.h"
#include "tools/replay/replayer.h"
#include "tools/replay/report.h"

namespace {

namespace rp = cudapool::replay;
namespace pool = cudapool::pool;

// Lines after which every pool is checked in the line-by-line replay (a check is O(blocks)).
constexpr std::uint64_t kCheckedLines = 32;

[[noreturn]] void broken(const char* promise, const std::string& detail) {
  std::fprintf(stderr, "replay_fuzz: broken promise: %s\n  %s\n", promise,
               detail.substr(0, 2000).c_str());
  std::abort();
}

void require(bool ok, const char* promise, const std::string& detail = "") {
  if (!ok) broken(promise, detail);
}

std::string where(int device, int ctx) {
  return "device " + std::to_string(device) + " ctx " + std::to_string(ctx);
}

// Every live pool: its invariants, its backend's consistency, its blocks' addresses.
void check_pools(const rp::Replayer& r) {
  std::size_t pools = 0;
  r.for_each_pool([&](int device, int ctx, const pool::DevicePool& p,
                      const pool::SimulatedBackend& backend) {
    ++pools;
    const std::vector<std::string> problems = pool::check_invariants(p);
    require(problems.empty(), "pool invariants hold",
            where(device, ctx) + ": " + (problems.empty() ? "" : problems[0]));
    require(backend.misuse() == 0, "the pool uses its simulated device consistently",
            where(device, ctx));
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
    p.for_each_block([&](const pool::Block& b) {
      require(b.ptr != 0 && b.size != 0, "no block at address 0 or of 0 bytes", where(device, ctx));
      require(b.ptr + b.size > b.ptr, "no block wraps past 2^64", where(device, ctx));
      ranges.emplace_back(b.ptr, b.ptr + b.size);
    });
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) {
      require(ranges[i - 1].second <= ranges[i].first, "the blocks of a pool do not overlap",
              where(device, ctx));
    }
  });
  require(pools <= rp::kMaxPools, "at most kMaxPools pools alive", std::to_string(pools));
}

void check_counts(const rp::Replayer& r) {
  const rp::ReplayCounts& c = r.counts();
  require(c.blank_lines + c.malformed_lines + c.other_lines <= c.lines,
          "blank, malformed and other lines are lines read");
  require(c.events_replayed <= c.lines, "no more events replayed than lines");
  require(r.problems().size() <= rp::kMaxProblemsKept, "at most 100 problems kept");
  require(!r.devices().empty(), "the report has a device");
}

// What two replays of the same log must agree on: counts, devices, statistics (not the order of
// the problems: the recorded log's parse problems come first).
std::string outcome(const rp::Replayer& r) {
  const rp::ReplayCounts& c = r.counts();
  std::string out;
  for (const std::uint64_t n : {c.lines,
                                c.events_replayed,
                                c.other_lines,
                                c.blank_lines,
                                c.malformed_lines,
                                c.allocs,
                                c.frees,
                                c.failed_allocs,
                                c.frees_of_failed_allocs,
                                c.unknown_frees,
                                c.duplicate_allocs,
                                c.zero_size_allocs,
                                c.oom_events,
                                c.oom_not_reproduced,
                                c.empty_cache_events,
                                c.free_completed_events,
                                c.contexts_dropped,
                                c.fenced_frees,
                                c.segment_alloc_events,
                                c.segment_refused_events,
                                c.segments_at_log_address,
                                static_cast<std::uint64_t>(c.log_addresses_dropped),
                                c.events_of_unlisted_devices,
                                c.events_over_pool_limit,
                                c.reserved_pointer_allocs,
                                c.address_space_refusals}) {
    out += std::to_string(n) + ",";
  }
  for (const int device : r.devices()) {
    out += "\ndevice " + std::to_string(device) + " " + std::to_string(r.device_memory(device));
    pool::for_each_stat(r.stats(device), [&](std::string_view name, std::int64_t value) {
      out += " " + std::string(name) + "=" + std::to_string(value);
    });
  }
  return out + "\nconf " + r.conf() + " (" + r.conf_origin() + ")";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);

  // (1) As cudapool-replay reads a file.
  rp::Replayer streamed{rp::ReplaySettings{}};
  {
    std::istringstream in(input);
    streamed.feed_stream(in);
  }
  check_pools(streamed);
  check_counts(streamed);
  const std::string text = rp::text_report(streamed, 0);
  require(text.find("cudapool memory summary") != std::string::npos, "a text report");
  require(rp::json_report(streamed, 0).find("cudapool.replay/1") != std::string::npos,
          "a JSON report");
  const std::string expected = outcome(streamed);
  (void)streamed.holds_a_log();
  (void)streamed.replayed_nothing();

  // (2) Line by line, the pools checked as the lines come.
  rp::Replayer stepped{rp::ReplaySettings{}};
  {
    std::istringstream in(input);
    cudapool::log::for_each_line(
        in,
        [&](std::uint64_t number, std::string_view line) {
          stepped.feed(number, line);
          if (number <= kCheckedLines) check_pools(stepped);
        },
        [&](std::uint64_t number) { stepped.feed_too_long(number); });
    stepped.finish();
  }
  check_pools(stepped);
  require(outcome(stepped) == expected, "line by line replays as the stream does");

  // (3) Read once, then replayed (cudapool tune).
  std::istringstream in(input);
  const rp::RecordedLog recorded = rp::read_log(in);
  rp::Replayer once{rp::ReplaySettings{}};
  once.replay(recorded);
  check_pools(once);
  check_counts(once);
  require(recorded.lines == streamed.counts().lines, "the recorded log has every line");
  const std::string got = outcome(once);
  require(got == expected, "a recorded log replays as the stream does",
          got.substr(0, 1000) + "\n  --- streamed ---\n  " + expected.substr(0, 1000));
  return 0;
}
