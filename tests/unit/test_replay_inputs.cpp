// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_replay_inputs.cpp: the replay on hostile input (issue 18): lines longer than the
// line limit, a byte order mark (issue 26), devices and contexts at the edges of the format's
// ranges (each pool in an address range of its own), device numbers the header does not list,
// more pools than the shim can have.
// Not here: which lines are malformed (test_replay_lines.cpp), ordinary replays (test_replay.cpp).
#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "log/read/line_reader.h"
#include "pool/invariants.h"
#include "tests/unit/catch.h"
#include "tools/replay/recorded_log.h"
#include "tools/replay/replayer.h"
#include "tools/replay/report.h"

using namespace cudapool;
using namespace cudapool::replay;
using cudapool::log::for_each_line;
using cudapool::log::kMaxLineBytes;

namespace {

std::string header_with_devices(const std::vector<int>& ids, const std::string& conf = "") {
  std::string s =
      R"({"schema":"cudapool.log/1","version":"0.1.0","conf":")" + conf + R"(","devices":[)";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    s += (i ? "," : "") + std::string(R"({"id":)") + std::to_string(ids[i]) +
         R"(,"name":"t","total_memory":85899345920})";
  }
  return s + "]}";
}

std::string event(const char* action, int dev, int ctx, std::uint64_t ptr, std::uint64_t size) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                R"({"seq":1,"t_ns":1,"tid":1,"dev":%d,"ctx":%d,"action":"%s","ptr":"0x%llx",)"
                R"("size":%llu})",
                dev, ctx, action, static_cast<unsigned long long>(ptr),
                static_cast<unsigned long long>(size));
  return buf;
}

Replayer run(const std::string& text, ReplaySettings settings = {}) {
  Replayer r(std::move(settings));
  std::istringstream in(text);
  r.feed_stream(in);
  return r;
}

bool any_problem_has(const Replayer& r, const std::string& text) {
  return std::any_of(r.problems().begin(), r.problems().end(),
                     [&](const Problem& p) { return p.what.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("replay inputs: a line longer than the line limit is one malformed line") {
  // 64 MiB and one byte of padding inside an otherwise valid event: malformed, and the lines
  // around it are read as usual (numbered as in the file).
  const std::string pad(kMaxLineBytes, 'x');
  const std::string log = event("alloc", 0, 0, 0x10, 4096) + "\n" + R"({"pad":")" + pad + "\"," +
                          event("alloc", 0, 0, 0x20, 4096).substr(1) + "\n" +
                          event("free_requested", 0, 0, 0x10, 0) + "\n";
  Replayer r = run(log);
  CHECK(r.counts().lines == 3);
  CHECK(r.counts().malformed_lines == 1);
  CHECK(r.counts().events_replayed == 2);
  REQUIRE_FALSE(r.problems().empty());
  CHECK(r.problems()[0].line == 2);
  CHECK(r.problems()[0].what.find("longer than") != std::string::npos);
  // A last line without a newline, over the limit, is malformed too.
  Replayer last =
      run(event("alloc", 0, 0, 0x10, 4096) + "\n" + std::string(kMaxLineBytes + 1, ' '));
  CHECK(last.counts().lines == 2);
  CHECK(last.counts().malformed_lines == 1);
}

TEST_CASE("replay inputs: the line reader cuts at its limit and numbers every line") {
  std::istringstream in("short\n" + std::string(40, 'a') + "\nok\n" + std::string(41, 'b'));
  std::vector<std::pair<std::uint64_t, std::string>> lines;
  std::vector<std::uint64_t> too_long;
  for_each_line(
      in, [&](std::uint64_t n, std::string_view line) { lines.emplace_back(n, line); },
      [&](std::uint64_t n) { too_long.push_back(n); }, 39);
  CHECK(lines == std::vector<std::pair<std::uint64_t, std::string>>{{1, "short"}, {3, "ok"}});
  CHECK(too_long == std::vector<std::uint64_t>{2, 4});
}

TEST_CASE("replay inputs: a byte order mark is skipped before the header only") {
  // docs/log-format.md, "Valid lines": a UTF-8 BOM at the start of the first line is not part of
  // it (an editor's); the Python reader takes the same lines (tests/cli/replay_report_agree.sh).
  const std::string bom = "\xEF\xBB\xBF";
  Replayer r = run(bom + header_with_devices({0}) + "\n" + event("alloc", 0, 0, 0x10, 4096) + "\n" +
                   bom + event("free_requested", 0, 0, 0x10, 0) + "\n");
  CHECK(r.has_header());
  CHECK(r.counts().lines == 3);
  CHECK(r.counts().malformed_lines == 1);
  REQUIRE_FALSE(r.problems().empty());
  CHECK(r.problems()[0].line == 3);
  std::istringstream in(bom + "\n" + bom + "x\n");
  std::vector<std::pair<std::uint64_t, std::string>> lines;
  for_each_line(
      in, [&](std::uint64_t n, std::string_view line) { lines.emplace_back(n, line); },
      [](std::uint64_t) {});
  CHECK(lines == std::vector<std::pair<std::uint64_t, std::string>>{{1, ""}, {2, bom + "x"}});
}

TEST_CASE("replay inputs: device 4095 context 255 replays like device 0 context 0") {
  // Expandable segments take the backend's fresh address ranges: with the old layout this pool's
  // base wrapped to 0, its first block was at address 0 and its free was "not allocated".
  for (const char* conf : {"expandable_segments:True", ""}) {
    INFO(conf);
    auto log = [](int dev, int ctx) {
      return event("alloc", dev, ctx, 0x10, 1000) + "\n" +
             event("free_requested", dev, ctx, 0x10, 0) + "\n" +
             event("alloc", dev, ctx, 0x20, 1000) + "\n";
    };
    ReplaySettings settings;
    settings.conf = conf;
    Replayer edge = run(log(4095, 255), settings);
    Replayer zero = run(log(0, 0), settings);
    CHECK(edge.counts().unknown_frees == 0);
    CHECK(edge.problems().empty());
    CHECK(edge.stats(4095).allocated_bytes[0].current == zero.stats(0).allocated_bytes[0].current);
    CHECK(edge.stats(4095).allocated_bytes[0].current == 1024);
  }
}

TEST_CASE("replay inputs: pools of the format's extreme devices and contexts never overlap") {
  // Every accepted (dev, ctx), the largest included, gets an address range of its own.
  const std::vector<std::pair<int, int>> pools = {{0, 0},    {1, 0},     {4095, 255},
                                                  {4096, 0}, {65535, 0}, {65535, 255}};
  for (const char* conf : {"expandable_segments:True", ""}) {
    INFO(conf);
    std::string log;
    std::uint64_t ptr = 0x1000;
    for (const auto& [dev, ctx] : pools) {
      log += event("alloc", dev, ctx, ptr++, 1000) + "\n";
      log += event("alloc", dev, ctx, ptr++, 30 << 20) + "\n";
    }
    ReplaySettings settings;
    settings.conf = conf;
    settings.device_memory = 1ull << 30;
    Replayer r = run(log, settings);
    CHECK(r.counts().malformed_lines == 0);
    CHECK(r.counts().failed_allocs == 0);
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;  // [start, end) of blocks
    std::vector<int> devices;
    for (const auto& [dev, ctx] : pools) {
      if (std::find(devices.begin(), devices.end(), dev) != devices.end()) continue;
      devices.push_back(dev);
      const pool::DevicePool& p = r.pool(dev);
      CHECK(pool::check_invariants(p).empty());
      p.for_each_block([&](const pool::Block& b) {
        CHECK(b.ptr != 0);
        CHECK(b.ptr + b.size > b.ptr);  // no wrap past 2^64
        ranges.emplace_back(b.ptr, b.ptr + b.size);
      });
    }
    CHECK(devices.size() == 5);
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) {
      INFO(i);
      CHECK(ranges[i - 1].second <= ranges[i].first);
    }
  }
}

TEST_CASE("replay inputs: devices the header does not list are skipped with one message") {
  std::string log = header_with_devices({0, 1}) + "\n";
  for (int dev = 0; dev < 1000; ++dev) {
    log += event("alloc", dev, 0, 0x1000 + dev, 4096) + "\n";
  }
  Replayer r = run(log);
  CHECK(r.devices() == std::vector<int>{0, 1});
  CHECK(r.counts().events_replayed == 2);
  CHECK(r.counts().events_of_unlisted_devices == 998);
  CHECK(r.counts().malformed_lines == 0);
  // One problem for all of them: the first line, the devices and the count.
  REQUIRE(r.problems().size() == 1);
  CHECK(r.problems()[0].line == 4);
  CHECK(r.problems()[0].what.find("998 events") != std::string::npos);
  CHECK(r.problems()[0].what.find("998 devices") != std::string::npos);
  // A header without devices (or no header) lists none: then every device is replayed.
  Replayer none = run(event("alloc", 7, 0, 0x10, 4096) + "\n");
  CHECK(none.devices() == std::vector<int>{7});
}

TEST_CASE("replay inputs: at most 256 pools are alive at once, as in the shim") {
  std::string log;
  for (int dev = 0; dev < 300; ++dev) {
    log += event("alloc", dev, 0, 0x1000 + dev, 4096) + "\n";
  }
  Replayer r = run(log);
  CHECK(r.devices().size() == kMaxPools);
  CHECK(r.counts().events_over_pool_limit == 300 - kMaxPools);
  REQUIRE(r.problems().size() == 1);
  CHECK(r.problems()[0].line == kMaxPools + 1);
  CHECK(any_problem_has(r, "256 pools"));
  // A dropped context frees its place: the next pool is made.
  std::string cycle;
  for (int dev = 0; dev < 600; ++dev) {
    cycle +=
        event("alloc", dev, 0, 0x10, 4096) + "\n" + event("context_dropped", dev, 0, 0, 0) + "\n";
  }
  Replayer cycled = run(cycle);
  CHECK(cycled.counts().events_over_pool_limit == 0);
  CHECK(cycled.counts().contexts_dropped == 600);
  CHECK(cycled.problems().empty());
}

TEST_CASE("replay inputs: the recorded log (cudapool tune) skips the same events") {
  std::string log = header_with_devices({0}) + "\n";
  for (int dev = 0; dev < 5; ++dev) log += event("alloc", dev, 0, 0x1000 + dev, 4096) + "\n";
  std::istringstream in(log);
  const RecordedLog recorded = read_log(in);
  Replayer once{ReplaySettings{}};
  once.replay(recorded);
  Replayer streamed = run(log);
  CHECK(once.counts().events_of_unlisted_devices == 4);
  CHECK(streamed.counts().events_of_unlisted_devices == 4);
  CHECK(once.devices() == streamed.devices());
  CHECK(json_report(once, 0) == json_report(streamed, 0));
}
