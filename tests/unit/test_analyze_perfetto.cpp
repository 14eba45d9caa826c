// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_perfetto.cpp: what the engine keeps for the Perfetto export
// (tools/analyze/perfetto_trace.h; docs/analysis-format.md, "perfetto"): the counters after each
// event that changes the state, the first N instants of each device and action with the fields
// the trace shows (integers, strings and booleans; a ctx of 0 left out), the rest counted.
// tests/cli/perfetto_agree.sh checks the whole trace against the Python oracle on every log.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/unit/catch.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/perfetto_trace.h"

using namespace cudapool::analyze;

namespace {

std::string line(std::uint64_t seq, int dev, const std::string& action, const std::string& ptr,
                 std::uint64_t size, const std::string& extra = "") {
  return R"({"seq":)" + std::to_string(seq) + R"(,"t_ns":)" + std::to_string(1000 * seq) +
         R"(,"tid":1,"dev":)" + std::to_string(dev) + R"(,"action":")" + action + R"(","ptr":")" +
         ptr + R"(","size":)" + std::to_string(size) + extra + "}";
}

// The "perfetto" object (its text in *text, when given: nlohmann reads huge integers as doubles).
nlohmann::json traced(const std::vector<std::string>& lines, std::size_t points,
                      std::size_t instants, std::string* text = nullptr) {
  LogAnalysis a;
  a.hook = std::make_unique<PerfettoTrace>(points, instants);
  std::uint64_t n = 0;
  for (const std::string& l : lines) a.feed(++n, l);
  a.finish(LastLine{false, 10, "{}", true});
  JsonOut out;
  a.hook->write(out, ExportInputs{a, a, false, ""});
  if (text != nullptr) *text = out.text();
  return nlohmann::json::parse(out.text());
}

}  // namespace

TEST_CASE("analyze perfetto: counters after each state change, instants with their fields") {
  std::string text;
  const auto d = traced(
      {line(1, 0, "segment_alloc", "0x1000", 4096, R"(,"segment":"0x1000","stream":"0x0")"),
       line(2, 0, "alloc", "0x1000", 100, R"(,"block_size":512,"segment":"0x1000")"),
       line(3, 0, "oom", "0x0", 9999,
            R"(,"cause":"shortage","device_free":1.5,"device_total":123456789012345678901234)"),
       line(4, 0, "context_dropped", "0x0", 0, R"(,"ctx":0)"),
       line(5, 1, "context_dropped", "0x0", 0, R"(,"ctx":2)")},
      20000, 10, &text);
  const auto& dev0 = d["devices"][0];
  CHECK(dev0["dev"] == 0);
  CHECK(dev0["num_device_alloc"] == 1);
  CHECK(dev0["peak_allocated"] == 512);
  CHECK(dev0["peak_reserved"] == 4096);
  // [t_ns, allocated, reserved, active, reserved - allocated]: segment_alloc, alloc, drop
  CHECK(dev0["points"] ==
        nlohmann::json::parse("[[1000,0,4096,0,4096],[2000,512,4096,512,3584],[4000,0,0,0,0]]"));
  const auto& inst = d["instants"];
  REQUIRE(inst.size() == 4);
  CHECK(inst[0] ==
        nlohmann::json::parse(
            R"([1000,"segment_alloc",0,4096,4096,{"segment":"0x1000","stream":"0x0"}])"));
  // a float is no field of the trace; an integer of any size is kept exact
  CHECK(inst[1][1] == "oom");
  CHECK(inst[1][5].size() == 2);
  CHECK(inst[1][5]["cause"] == "shortage");
  CHECK(text.find(R"({"cause":"shortage","device_total":123456789012345678901234})") !=
        std::string::npos);
  CHECK(inst[2][5].dump() == "{}");  // ctx 0: left out
  CHECK(inst[3][5].dump() == R"({"ctx":2})");
  CHECK(d["devices"][1]["points"] == nlohmann::json::parse("[[5000,0,0,0,0]]"));
}

TEST_CASE("analyze perfetto: past max_instants of a device and action, events are counted") {
  std::vector<std::string> lines;
  std::uint64_t seq = 0;
  for (int i = 0; i < 5; ++i) {
    ++seq;
    lines.push_back(line(seq, 0, "empty_cache", "0x0", 0));
  }
  ++seq;
  lines.push_back(line(seq, 1, "empty_cache", "0x0", 0));
  const auto d = traced(lines, 10, 2);
  CHECK(d["instants"].size() == 3);  // two of device 0, one of device 1
  CHECK(d["instant_counts"] ==
        nlohmann::json::parse(R"([[0,"empty_cache",5],[1,"empty_cache",1]])"));
  CHECK(d["devices"][0]["points"].is_null());  // no state changed
}
