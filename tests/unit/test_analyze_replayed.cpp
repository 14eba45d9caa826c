// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_replayed.cpp: the engine's in-process replay of a log of requests
// (tools/analyze/replayed.h) hands the replay's decisions to its analysis as records, never as
// lines; here its figures are checked against the replay's own decision log read as text (the
// writer on a file, as `cudapool-replay --write-log` writes it, each line through
// LogAnalysis::feed): the same report and page, byte for byte, on the bundled logs of requests
// and on logs made here whose replay has oom events (with their figures), several devices,
// contexts other than 0 and segments given back. Not here: deciding that a log needs the replay
// (tests/cli/analyze_agree.sh reads the bundled example through the whole engine).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "log/read/line_reader.h"
#include "tests/unit/catch.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/page_json.h"
#include "tools/analyze/replayed.h"
#include "tools/analyze/report_json.h"
#include "tools/replay/log_writer.h"
#include "tools/replay/replayer.h"

using namespace cudapool::analyze;

namespace {

// What the outputs take of an analysis: its report and its page (as a log's own).
std::string document(const LogAnalysis& a, const Report& r) {
  JsonOut out;
  out.begin_array();
  write_report(out, a, r);
  write_page(out, a, r, rank_row(a, r, 0), 0, ReplayPart{});
  out.end_array();
  return out.take();
}

struct Replayed {
  std::string records, text;  // the documents of the two ways
  std::uint64_t events = 0;   // the replay's
  std::uint64_t ooms = 0;
};

Replayed both_ways(const std::string& log, const std::string& name) {
  Replayed out;
  // The engine's way: records.
  RequestReplay replay(name);
  std::istringstream in(log);
  cudapool::log::for_each_line(
      in, [&](std::uint64_t n, std::string_view line) { replay.feed(n, line); },
      [&](std::uint64_t n) { replay.feed_too_long(n); });
  replay.finish();
  out.records = document(replay.analysis(), replay.report());
  out.events = replay.analysis().events_;
  out.ooms =
      replay.analysis().action_counts_[static_cast<std::size_t>(cudapool::log::LogAction::kOom)];

  // The replay's decision log as a file, read back line by line.
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* file = open_memstream(&buffer, &size);
  REQUIRE(file != nullptr);
  cudapool::replay::PoolLogWriter writer;
  writer.attach(file, "the replay's log");
  cudapool::replay::ReplaySettings settings;
  settings.write_log = &writer;
  const JsonValue* version =
      replay.analysis().header_ ? replay.analysis().header_->find("version") : nullptr;
  settings.version = version != nullptr ? version->text : "";
  settings.argv = {"cudapool-replay", "--write-log", "-", name};
  {
    cudapool::replay::Replayer replayer(settings);
    std::istringstream again(log);
    cudapool::log::for_each_line(
        again, [&](std::uint64_t n, std::string_view line) { replayer.feed(n, line); },
        [&](std::uint64_t n) { replayer.feed_too_long(n); });
    replayer.finish();
    cudapool::log::Summary summary;
    for (const int dev : replayer.devices()) summary.devices.emplace_back(dev, replayer.stats(dev));
    std::string error;
    REQUIRE(writer.close(std::move(summary), &error));
  }
  const std::string written(buffer, size);
  std::free(buffer);
  LogAnalysis a{AnalysisOptions{false, false}};
  std::istringstream lines(written);
  LastLine last;
  cudapool::log::for_each_line(
      lines,
      [&](std::uint64_t n, std::string_view line) {
        a.feed(n, line);
        last = LastLine{false, line.size(), std::string(line.substr(0, kLastLinePeek)), true};
      },
      [&](std::uint64_t n) { a.feed_too_long(n); });
  a.finish(last);
  out.text = document(a, build_report(a, "the replay's log"));
  return out;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string header(const std::string& devices, const std::string& conf = "") {
  return R"({"schema":"cudapool.log/1","version":"0.1.0","pid":7,"host":"h","conf":")" + conf +
         R"(","devices":[)" + devices + "]}\n";
}

std::string request(std::uint64_t seq, int dev, int ctx, const char* action, std::uint64_t ptr,
                    std::uint64_t size) {
  char line[256];
  std::snprintf(
      line, sizeof line,
      R"({"seq":%llu,"t_ns":%llu,"tid":%d,"dev":%d,"ctx":%d,"action":"%s","ptr":"0x%llx","size":%llu})",
      static_cast<unsigned long long>(seq), static_cast<unsigned long long>(seq * 1000), 1 + dev,
      dev, ctx, action, static_cast<unsigned long long>(ptr),
      static_cast<unsigned long long>(size));
  return std::string(line) + "\n";
}

// Two devices of 1 GiB, two contexts on device 1: steps of allocations, some too large for what
// is left (oom events, after the pool gives its cached segments back), an empty_cache.
std::string small_devices_log() {
  std::string log = header(R"({"id":0,"name":"a","total_memory":1073741824},)"
                           R"({"id":1,"name":"b","total_memory":1073741824})");
  std::uint64_t seq = 0;
  for (int step = 0; step < 40; ++step) {
    for (int dev = 0; dev < 2; ++dev) {
      const int ctx = dev == 1 ? step % 2 : 0;
      std::uint64_t ptrs[6];
      for (int i = 0; i < 6; ++i) {
        ptrs[i] = 0x7f0000000000ull + (static_cast<std::uint64_t>(step) << 32) +
                  (static_cast<std::uint64_t>(i) << 28);
        const std::uint64_t size = (static_cast<std::uint64_t>(i + 1 + step % 5) << 24) + 512 * i;
        log += request(++seq, dev, ctx, "alloc", ptrs[i], size);
      }
      for (int i = 0; i < 6; i += 2) log += request(++seq, dev, ctx, "free_requested", ptrs[i], 0);
      log += request(++seq, dev, ctx, "alloc", 0x10000 + step, 900ull << 20);  // an oom, often
      for (int i = 1; i < 6; i += 2) log += request(++seq, dev, ctx, "free_requested", ptrs[i], 0);
    }
    if (step % 7 == 3) log += request(++seq, 0, 0, "empty_cache", 0, 0);
  }
  return log;
}

}  // namespace

TEST_CASE("analyze replayed: records give the documents of the replay's log read as lines") {
  for (const char* name : {"training-loop.jsonl"}) {
    const std::string path = std::string(CUDAPOOL_SOURCE_DIR) + "/examples/logs/" + name;
    const Replayed r = both_ways(file_text(path), path);
    INFO(name);
    CHECK(r.events > 1000);
    CHECK(r.records == r.text);
  }
  SECTION("oom events, two devices, contexts, expandable segments") {
    for (const char* conf : {"", "expandable_segments:True", "max_split_size_mb:64"}) {
      INFO(conf);
      std::string log = small_devices_log();
      log.replace(log.find(R"("conf":"")"), 9, std::string(R"("conf":")") + conf + "\"");
      const Replayed r = both_ways(log, "small");
      CHECK(r.ooms > 0);
      CHECK(r.records == r.text);
    }
  }
  SECTION("no log at all, and a log with no header") {
    const std::string no_header = small_devices_log().substr(small_devices_log().find('\n') + 1);
    for (const std::string& log : {std::string("not json\n"), no_header}) {
      const Replayed r = both_ways(log, "x");
      CHECK(r.records == r.text);
    }
  }
}

TEST_CASE("analyze replayed: a record's event is its line's, or none for an oom event") {
  cudapool::log::LogRecord r;
  r.seq = 5;
  r.t_ns = 77;
  r.tid = 3;
  r.device = 2;
  r.ctx = 1;
  r.action = cudapool::log::LogAction::kAlloc;
  r.ptr = 0x1000;
  r.size = 100;
  r.segment = 0x800;
  r.cache_hit = true;
  Event e;
  REQUIRE(event_of_record(r, &e));
  CHECK(e.seq == 5);
  CHECK(e.t_ns == 77);
  CHECK(e.tid == 3);
  CHECK(e.dev == 2);
  CHECK(e.ctx == 1);
  CHECK(e.block_size == 100);  // none written: read as size
  CHECK(e.has_segment);
  CHECK(e.segment == 0x800);
  CHECK(e.cache_hit);
  CHECK(e.action_name == "alloc");
  r.action = cudapool::log::LogAction::kFreeRequested;
  r.block_size = 512;
  r.segment = 0;
  REQUIRE(event_of_record(r, &e));
  CHECK(e.block_size == 512);
  CHECK(!e.has_segment);
  CHECK(!e.cache_hit);  // only an alloc carries it
  r.action = cudapool::log::LogAction::kOom;
  CHECK(!event_of_record(r, &e));
  r.action = cudapool::log::LogAction::kAlloc;
  r.device = 70000;
  CHECK(!event_of_record(r, &e));
}
