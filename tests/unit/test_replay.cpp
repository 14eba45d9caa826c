// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_replay.cpp: the replay engine (tools/replay): log lines in, pool statistics and
// counted problems out.
#include <algorithm>
#include <sstream>
#include <string>

#include "tests/unit/catch.h"
#include "tools/replay/flat_json.h"
#include "tools/replay/log_event.h"
#include "tools/replay/replayer.h"
#include "tools/replay/report.h"

#include <nlohmann/json.hpp>

using namespace cudapool;
using namespace cudapool::replay;

namespace {

std::string header(const std::string& conf, std::uint64_t memory) {
  const std::string device = R"(,"name":"t","total_memory":)" + std::to_string(memory) + "}";
  return R"({"schema":"cudapool.log/1","version":"0.1.0","conf":")" + conf +
         R"(","devices":[{"id":0)" + device + R"(,{"id":1)" + device + "]}";
}

std::string alloc(std::uint64_t ptr, std::uint64_t size, int dev = 0) {
  char buf[160];
  std::snprintf(
      buf, sizeof buf,
      R"({"seq":1,"t_ns":1,"tid":1,"dev":%d,"action":"alloc","ptr":"0x%llx","size":%llu})", dev,
      static_cast<unsigned long long>(ptr), static_cast<unsigned long long>(size));
  return buf;
}

std::string free_(std::uint64_t ptr, int dev = 0) {
  char buf[160];
  std::snprintf(
      buf, sizeof buf,
      R"({"seq":2,"t_ns":2,"tid":1,"dev":%d,"action":"free_requested","ptr":"0x%llx","size":0})",
      dev, static_cast<unsigned long long>(ptr));
  return buf;
}

// A header as the shim writes it: its options name reuse_fence, so frees may have been fenced.
std::string shim_header() {
  return R"({"schema":"cudapool.log/1","version":"0.1.0","conf":"","options":{"reuse_fence":"auto"},)"
         R"("devices":[{"id":0,"name":"t","total_memory":85899345920}]})";
}

std::string completed(std::uint64_t ptr) {
  char buf[160];
  std::snprintf(
      buf, sizeof buf,
      R"({"seq":3,"t_ns":3,"tid":1,"dev":0,"action":"free_completed","ptr":"0x%llx","size":0})",
      static_cast<unsigned long long>(ptr));
  return buf;
}

Replayer run(const std::string& text, ReplaySettings settings = {}) {
  Replayer r(std::move(settings));
  std::istringstream in(text);
  r.feed_stream(in);
  return r;
}

std::int64_t stat(const Replayer& r, const std::string& name, int dev = 0) {
  std::int64_t found = -12345;
  pool::for_each_stat(r.pool(dev).stats(), [&](std::string_view n, std::int64_t v) {
    if (n == name) found = v;
  });
  return found;
}

}  // namespace

TEST_CASE("replay: flat JSON scanner accepts objects and rejects everything else") {
  int fields = 0;
  auto count = [&](const JsonField&) { ++fields; };
  CHECK(scan_flat_object(R"({"a":1,"b":"x\"y","c":[1,{"d":2}],"e":true})", count));
  CHECK(fields == 4);
  CHECK(scan_flat_object(R"(  {}  )", count));
  for (const char* bad : {"", "[]", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1} x",
                          "{\"a\":[1,2}", "{\"a\":\"unterminated}", "{\"a\":nope}", "{a:1}"}) {
    INFO(bad);
    CHECK_FALSE(scan_flat_object(bad, count));
  }
}

TEST_CASE("replay: sizes are unsigned integers, pointers hex strings, and overflow is refused") {
  auto field = [](JsonKind kind, std::string_view text) { return JsonField{"k", text, kind}; };
  CHECK(parse_hex(field(JsonKind::kString, "0x1f")).value() == 31);
  CHECK(parse_uint(field(JsonKind::kNumber, "42")).value() == 42);
  CHECK_FALSE(parse_uint(field(JsonKind::kString, "42")));  // a string is not a size
  CHECK_FALSE(parse_hex(field(JsonKind::kNumber, "42")));   // nor a number a pointer
  CHECK_FALSE(parse_uint(field(JsonKind::kNumber, "-1")));
  CHECK_FALSE(parse_uint(field(JsonKind::kNumber, "1.5")));
  CHECK_FALSE(parse_hex(field(JsonKind::kString, "0x")));
  CHECK_FALSE(parse_hex(field(JsonKind::kString, "0x1g")));
  CHECK_FALSE(parse_uint(field(JsonKind::kNumber, "99999999999999999999999")));
  CHECK_FALSE(parse_uint(field(JsonKind::kLiteral, "true")));
}

TEST_CASE("replay: alloc and free events drive the pool like PyTorch's allocator") {
  const std::string log = header("", 80ull << 30) + "\n" + alloc(0x10, 1000) + "\n" +
                          alloc(0x20, 3 << 20) + "\n" + free_(0x10) + "\n" + free_(0x20) + "\n";
  Replayer r = run(log);
  CHECK(r.counts().events_replayed == 4);
  CHECK(r.counts().malformed_lines == 0);
  CHECK(stat(r, "allocated_bytes.all.peak") == 1024 + (3 << 20));
  CHECK(stat(r, "reserved_bytes.all.peak") == (2 << 20) + (20 << 20));
  CHECK(stat(r, "requested_bytes.all.peak") == 1000 + (3 << 20));
  CHECK(stat(r, "num_device_alloc") == 2);
  CHECK(stat(r, "allocated_bytes.all.current") == 0);
  CHECK(r.conf_origin() == "log header");
}

TEST_CASE("replay: --conf overrides the header's conf string") {
  const std::string log =
      header("max_split_size_mb:100", 80ull << 30) + "\n" + alloc(1, 200 << 20) + "\n";
  Replayer from_header = run(log);
  CHECK(stat(from_header, "max_split_size") == 100 << 20);
  ReplaySettings settings;
  settings.conf = "max_split_size_mb:300";
  Replayer from_flag = run(log, settings);
  CHECK(stat(from_flag, "max_split_size") == 300ll << 20);
  CHECK(from_flag.conf_origin() == "--conf");
}

TEST_CASE("replay: device memory comes from the flag, else the header, else 80 GiB") {
  const std::string events = alloc(1, 30ull << 20) + "\n" + alloc(2, 30ull << 20) + "\n";
  Replayer small = run(header("", 40ull << 20) + "\n" + events);
  CHECK(small.device_memory(0) == 40ull << 20);
  CHECK(small.counts().failed_allocs == 1);
  CHECK(stat(small, "num_ooms") == 1);
  ReplaySettings settings;
  settings.device_memory = 1ull << 30;
  Replayer big = run(header("", 40ull << 20) + "\n" + events, settings);
  CHECK(big.counts().failed_allocs == 0);
  Replayer no_header = run(events);
  CHECK(no_header.device_memory(0) == kDefaultDeviceMemory);
}

TEST_CASE("replay: bad lines and unknown frees are counted with line numbers, never fatal") {
  const std::string log =
      header("", 80ull << 30) + "\n" +                                               // line 1
      "not json\n" +                                                                 // 2
      alloc(0x10, 4096) + "\n" +                                                     // 3
      free_(0x99) + "\n" +                                                           // 4: unknown
      R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"alloc","ptr":"0x5"})" + "\n" +  // 5: no size
      R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"alloc","ptr":"zz","size":5})" +
      "\n" +                      // 6: bad ptr
      alloc(0x10, 4096) + "\n" +  // 7: duplicate live pointer
      "\n" +                      // 8: blank
      R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"free_completed","ptr":"0x1","size":5})" +
      "\n" +                                    // 9
      free_(0x10) + "\n" + free_(0x10) + "\n";  // 10 ok, 11 double free
  Replayer r = run(log);
  const ReplayCounts& c = r.counts();
  CHECK(c.malformed_lines == 3);
  CHECK(c.unknown_frees == 2);
  CHECK(c.duplicate_allocs == 1);
  CHECK(c.blank_lines == 1);
  CHECK(c.other_lines == 1);  // the header
  CHECK(c.free_completed_events == 1);
  CHECK(c.events_replayed == 2);
  std::vector<std::uint64_t> lines;
  for (const Problem& p : r.problems()) lines.push_back(p.line);
  CHECK(lines == std::vector<std::uint64_t>{2, 4, 5, 6, 7, 11});
}

TEST_CASE("replay: frees of allocations that failed are skipped, not unknown") {
  const std::string log = header("", 30ull << 20) + "\n" + alloc(1, 25ull << 20) + "\n" +
                          alloc(2, 25ull << 20) + "\n" + free_(2) + "\n" + free_(1) + "\n";
  Replayer r = run(log);
  CHECK(r.counts().failed_allocs == 1);
  CHECK(r.counts().frees_of_failed_allocs == 1);
  CHECK(r.counts().unknown_frees == 0);
}

TEST_CASE("replay: zero-size allocs are skipped like PyTorch's raw_alloc(0)") {
  Replayer r = run(alloc(1, 0) + "\n" + free_(1) + "\n");
  CHECK(r.counts().zero_size_allocs == 1);
  CHECK(stat(r, "allocation.all.allocated") == 0);
}

TEST_CASE("replay: oom events are retried and counted when the replay can serve them") {
  const std::string log =
      header("", 1ull << 30) + "\n" +
      R"({"seq":1,"t_ns":1,"tid":1,"action":"oom","dev":0,"ptr":"0x0","size":2147483648})" + "\n" +
      R"({"seq":1,"t_ns":1,"tid":1,"action":"oom","dev":0,"ptr":"0x0","size":4096})" + "\n";
  Replayer r = run(log);
  CHECK(r.counts().oom_events == 2);
  CHECK(r.counts().oom_not_reproduced == 1);
  CHECK(stat(r, "num_ooms") == 1);
  CHECK(stat(r, "allocated_bytes.all.current") == 0);
}

TEST_CASE("replay: empty_cache events release idle segments") {
  const std::string log =
      alloc(1, 4096) + "\n" + free_(1) + "\n" +
      R"({"seq":1,"t_ns":1,"tid":1,"action":"empty_cache","dev":0,"ptr":"0x0","size":0})" + "\n";
  Replayer r = run(log);
  CHECK(stat(r, "reserved_bytes.all.current") == 0);
  CHECK(stat(r, "num_device_free") == 1);
}

TEST_CASE("replay: devices are separate pools routed by the dev field") {
  Replayer r = run(alloc(1, 4096, 0) + "\n" + alloc(1, 4096, 1) + "\n" + free_(1, 1) + "\n");
  REQUIRE(r.devices() == std::vector<int>{0, 1});
  CHECK(stat(r, "allocated_bytes.all.current", 0) == 4096);
  CHECK(stat(r, "allocated_bytes.all.current", 1) == 0);
}

TEST_CASE("replay: a line longer than the read buffer and a last line without newline") {
  std::string padding(3 << 20, ' ');
  const std::string line =
      "{\"pad\":\"" + std::string(3 << 20, 'x') + "\"," + alloc(7, 4096).substr(1);
  Replayer r = run(line + "\n" + free_(7));
  CHECK(r.counts().events_replayed == 2);
  CHECK(r.counts().malformed_lines == 0);
}

TEST_CASE("replay: the JSON report holds every memory_stats name and the counters") {
  Replayer r = run(alloc(1, 4096) + "\n");
  const auto json = nlohmann::json::parse(json_report(r, 0.5));
  CHECK(json["schema"] == "cudapool.replay/1");
  CHECK(json["stats"]["allocated_bytes.all.current"] == 4096);
  CHECK(json["stats"]["max_split_size"] == -1);
  CHECK(json["stats"].size() == 9 * 3 * 4 + 2 * 4 + 6);
  CHECK(json["devices"]["0"]["stats"] == json["stats"]);
  CHECK(json["failed_allocs"] == 0);
  CHECK(json["counts"]["events_replayed"] == 1);
}

TEST_CASE("replay: an empty log still reports device 0 with zero statistics") {
  Replayer r = run("");
  REQUIRE(r.devices() == std::vector<int>{0});
  CHECK(stat(r, "reserved_bytes.all.peak") == 0);
  CHECK(text_report(r, 0).find("cudapool memory summary, device ID 0") != std::string::npos);
}

TEST_CASE("replay: new segments take the addresses of the log's segment_alloc events") {
  // Two segments logged at descending addresses, as the CUDA driver hands them out.
  const std::string log =
      std::string(
          R"({"seq":1,"t_ns":1,"tid":1,"action":"segment_alloc","dev":0,"ptr":"0x7f0001000000","size":12582912})") +
      "\n" +
      R"({"seq":1,"t_ns":1,"tid":1,"action":"segment_alloc","dev":0,"ptr":"0x7f0000000000","size":12582912})" +
      "\n" + alloc(1, 12 << 20) + "\n" + alloc(2, 12 << 20) + "\n";
  Replayer r = run(log);
  CHECK(r.counts().segment_alloc_events == 2);
  CHECK(r.counts().segments_at_log_address == 2);
  CHECK_FALSE(r.counts().log_addresses_dropped);
  std::vector<std::uintptr_t> segments;
  r.pool(0).for_each_block([&](const pool::Block& b) { segments.push_back(b.segment); });
  std::sort(segments.begin(), segments.end());
  CHECK(segments == std::vector<std::uintptr_t>{0x7f0000000000, 0x7f0001000000});

  ReplaySettings fresh;
  fresh.log_addresses = false;
  Replayer r2 = run(log, fresh);
  CHECK(r2.counts().segments_at_log_address == 0);
}

TEST_CASE("replay: a log address script is dropped at the first segment that does not match") {
  const std::string log =
      std::string(
          R"({"seq":1,"t_ns":1,"tid":1,"action":"segment_alloc","dev":0,"ptr":"0x7f0000000000","size":4194304})") +
      "\n" + alloc(1, 2 << 20) + "\n";  // needs a 20 MiB segment, the log offers 4 MiB
  Replayer r = run(log);
  CHECK(r.counts().segments_at_log_address == 0);
  CHECK(r.counts().log_addresses_dropped);
  CHECK(r.counts().events_replayed == 1);
}

TEST_CASE("replay: the log's summary line is neither a header nor a problem") {
  const std::string log =
      header("", 80ull << 30) + "\n" + alloc(1, 4096) + "\n" +
      R"({"schema":"cudapool.log/1","action":"summary","seq":2,"t_ns":5,"events":1,"devices":{},"leaks":[]})" +
      "\n";
  Replayer r = run(log);
  CHECK(r.problems().empty());
  CHECK(r.counts().other_lines == 2);  // the header and the summary
  CHECK(r.counts().events_replayed == 1);
}

TEST_CASE("replay: a free whose free_completed does not follow at once stays fenced") {
  // A freed, then B allocated before A's block came back: B must take a new block, and A stays
  // active until its free_completed; then C reuses A's block.
  const std::string log = shim_header() + "\n" + alloc(0x10, 4096) + "\n" + free_(0x10) + "\n" +
                          alloc(0x20, 4096) + "\n";
  Replayer fenced = run(log);
  CHECK(fenced.counts().fenced_frees == 1);
  CHECK(stat(fenced, "active.all.current") == 2);
  CHECK(stat(fenced, "allocation.all.current") == 1);

  Replayer passed = run(log + completed(0x10) + "\n" + alloc(0x30, 4096) + "\n");
  CHECK(passed.counts().fenced_frees == 1);
  CHECK(passed.counts().free_completed_events == 1);
  CHECK(stat(passed, "active.all.current") == 2);  // B and C; A's block went to C
  CHECK(stat(passed, "allocation.all.current") == 2);
  CHECK(stat(passed, "active_bytes.all.peak") == 2 * 4096);  // A came back before C
}

TEST_CASE("replay: a free completed at once, or a log without fences, frees at once") {
  const std::string events = alloc(0x10, 4096) + "\n" + free_(0x10) + "\n";
  Replayer at_once =
      run(shim_header() + "\n" + events + completed(0x10) + "\n" + alloc(0x20, 4096) + "\n");
  CHECK(at_once.counts().fenced_frees == 0);
  CHECK(stat(at_once, "active_bytes.all.peak") == 4096);

  // No options in the header (a converted trace): free_requested alone frees.
  Replayer plain = run(header("", 80ull << 30) + "\n" + events + alloc(0x20, 4096) + "\n");
  CHECK(plain.counts().fenced_frees == 0);
  CHECK(stat(plain, "active_bytes.all.peak") == 4096);

  // The last free of a shim log with no free_completed after it was still fenced at exit.
  Replayer last = run(shim_header() + "\n" + events);
  CHECK(last.counts().fenced_frees == 1);
  CHECK(stat(last, "active.all.current") == 1);
  CHECK(stat(last, "allocation.all.current") == 0);
}

TEST_CASE("replay: context_dropped forgets that device's pool; the next event starts a new one") {
  const std::string dropped =
      R"({"seq":9,"t_ns":9,"tid":1,"dev":1,"action":"context_dropped","ptr":"0x0","size":0})";
  // Device 1 holds two blocks when its context goes; device 0's block is untouched by that.
  const std::string log = header("", 80ull << 30) + "\n" + alloc(0x10, 1000, 0) + "\n" +
                          alloc(0x20, 3 << 20, 1) + "\n" + alloc(0x30, 1000, 1) + "\n" + dropped +
                          "\n" + alloc(0x40, 4096, 1) + "\n";
  Replayer r = run(log);
  r.finish();
  CHECK(r.counts().contexts_dropped == 1);
  CHECK(r.counts().unknown_frees == 0);
  CHECK(stat(r, "allocation.all.allocated", 1) == 1);  // only the block after the drop
  CHECK(stat(r, "allocated_bytes.all.current", 1) == 4096);
  CHECK(stat(r, "reserved_bytes.all.current", 1) == 2 << 20);
  CHECK(stat(r, "allocated_bytes.all.current", 0) == 1024);
  // A device whose context is dropped with nothing after it is no longer listed.
  Replayer gone = run(header("", 80ull << 30) + "\n" + alloc(0x20, 3 << 20, 1) + "\n" + dropped +
                      "\n" + alloc(0x10, 1000, 0) + "\n");
  gone.finish();
  CHECK(gone.devices() == std::vector<int>{0});
}

TEST_CASE("replay: each context of a device (ctx) has a pool of its own; stats add them up") {
  auto in_ctx = [](std::string line, int ctx) {
    return line.replace(line.find(",\"action\""), 0, ",\"ctx\":" + std::to_string(ctx));
  };
  const std::string dropped_1 =
      R"({"seq":9,"t_ns":9,"tid":1,"dev":0,"ctx":1,"action":"context_dropped","ptr":"0x0","size":0})";
  // Context 0 and context 1 of device 0 each hold a block; context 1 goes; its next block comes
  // from a new pool. Context 0's block stays allocated, and its free is known.
  const std::string log = header("", 80ull << 30) + "\n" + alloc(0x10, 1000) + "\n" +
                          in_ctx(alloc(0x20, 3 << 20), 1) + "\n" + dropped_1 + "\n" +
                          in_ctx(alloc(0x30, 4096), 1) + "\n" + free_(0x10) + "\n";
  Replayer r = run(log);
  r.finish();
  CHECK(r.counts().contexts_dropped == 1);
  CHECK(r.counts().unknown_frees == 0);
  CHECK(r.devices() == std::vector<int>{0});
  CHECK(r.stats(0).allocated_bytes[0].current == 4096);           // context 1's new block only
  CHECK(r.stats(0).reserved_bytes[0].current == 4 << 20);         // a small segment in each pool
  CHECK(r.pool(0).stats().reserved_bytes[0].current == 2 << 20);  // context 0's pool
  // Without ctx, the same events ran through one pool: context 0's free was unknown.
  const std::string merged =
      header("", 80ull << 30) + "\n" + alloc(0x10, 1000) + "\n" + alloc(0x20, 3 << 20) + "\n" +
      R"({"seq":9,"t_ns":9,"tid":1,"dev":0,"action":"context_dropped","ptr":"0x0","size":0})" +
      "\n" + alloc(0x30, 4096) + "\n" + free_(0x10) + "\n";
  Replayer one = run(merged);
  one.finish();
  CHECK(one.counts().unknown_frees == 1);
}
