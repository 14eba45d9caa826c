// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_fast_line.cpp: the engine's fast path for the writers' event lines
// (tools/analyze/fast_line.h) gives exactly what the general path (the flat_json scanner and
// log_line.cpp's checks) gives the same line: the event and the raw fields, on every action the
// writer formats with every optional field, and on lines near the path's edges and lines mutated
// at random (seeded), where it either agrees or leaves the line to the general path. A line that
// starts with a space is never the fast path's: that is how the general path's answer is had. The
// lines: tests/unit/writer_lines.h.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "log/record.h"
#include "tests/unit/catch.h"
#include "tests/unit/writer_lines.h"
#include "tools/analyze/fast_line.h"
#include "tools/analyze/log_line.h"

using namespace cudapool::analyze;
using cudapool::log::LogAction;

namespace {

std::string field_text(const std::optional<JsonField>& f) {
  if (!f) return "-";
  return std::string(f->key) + "|" + std::string(f->value) + "|" +
         std::to_string(static_cast<int>(f->kind)) + (f->key_escaped ? "k" : "") +
         (f->value_escaped ? "v" : "");
}

std::string raw_text(const RawFields& r) {
  std::string s;
  for (const auto* f :
       {&r.action, &r.schema, &r.seq, &r.t_ns, &r.tid, &r.dev, &r.ctx, &r.ptr, &r.size,
        &r.block_size, &r.segment, &r.stream, &r.devices, &r.cache_hit, &r.backtrace, &r.cause}) {
    s += field_text(*f) + ";";
  }
  for (const auto& f : r.figures) s += field_text(f) + ";";
  return s;
}

std::string event_text(const Event& e) {
  return std::to_string(e.seq) + " " + std::to_string(e.t_ns) + " " + std::to_string(e.tid) + " " +
         std::to_string(e.ptr) + " " + std::to_string(e.size) + " " + std::to_string(e.block_size) +
         " " + std::to_string(e.dev) + " " + std::to_string(e.ctx) + " " +
         (e.has_segment ? "seg " : "noseg ") + std::to_string(e.segment) + " " +
         std::to_string(e.action) + " " + std::string(e.action_name) + " " +
         (e.cache_hit ? "hit" : "miss");
}

// Whether the fast path took the line; when it did, that it agrees with the general path.
bool fast_agrees(const std::string& line) {
  RawFields raw;
  std::string action;
  Event e;
  if (!fast_event_line(line, raw, &action, e)) return false;
  e.action_name = action;
  static LineDecoder general;
  const std::string spaced = " " + line;  // the raw fields' views point into it
  const Line& g = general.decode(spaced);
  INFO(line);
  REQUIRE(g.kind == LineKind::kEvent);
  CHECK(event_text(e) == event_text(g.event));
  CHECK(raw_text(raw) == raw_text(general.raw()));
  CHECK(*general.action() == action);
  // And the decoder takes the fast path's answer for the line itself.
  static LineDecoder decoder;
  const Line& d = decoder.decode(line);
  REQUIRE(d.kind == LineKind::kEvent);
  CHECK(event_text(d.event) == event_text(g.event));
  CHECK(raw_text(decoder.raw()) == raw_text(general.raw()));
  return true;
}

}  // namespace

TEST_CASE("analyze fast line: every line the writer writes, as the general path reads it") {
  std::size_t taken = 0;
  for (const std::string& line : cudapool::test::written_lines())
    taken += fast_agrees(line) ? 1 : 0;
  // All but the lines with an error (variant 5): a key the fast path leaves to the general one.
  CHECK(taken == cudapool::test::written_lines().size() * 5 / 6);
  CHECK(fast_agrees(
      R"({"seq":2,"t_ns":9,"tid":1,"dev":0,"action":"alloc","ptr":"0x7ff01e800000","size":16,"block_size":512,"segment":"0x7ff01e800000","cache_hit":false,"latency_ns":4,"backtrace":["0x7fee8ce146f3","0x7FEE8CE50CC3"]})"));
}

TEST_CASE("analyze fast line: lines at its edges are taken only when the general path agrees") {
  const std::string base =
      R"("seq":1,"t_ns":2,"tid":3,"dev":0,"action":"alloc","ptr":"0x10","size":100)";
  const auto line = [&](const std::string& extra) { return "{" + base + extra + "}"; };
  CHECK(fast_agrees(line("")));
  CHECK(fast_agrees(line(R"(,"ctx":255,"backtrace":[])")));
  CHECK(fast_agrees(line(R"(,"cache_hit":true)")));
  CHECK(fast_agrees(
      R"({"action":"made_up","seq":1,"t_ns":2,"tid":3,"dev":65535,"ptr":"0xABCDEF0123456789","size":1234567890123456789})"));
  // Left to the general path, whether valid or not.
  const std::vector<std::string> others = {
      line(R"(,"ctx":256)"),
      line(R"(,"size":5)"),
      line(R"(,"xyz":1)"),
      line(R"(,"block_size":01)"),
      line(R"(,"block_size":1.0)"),
      line(R"(,"block_size":1e3)"),
      line(R"(,"block_size":-1)"),
      line(R"(,"block_size":12345678901234567890)"),
      line(R"(,"segment":"0X10")"),
      line(R"(,"segment":"0x11112222333344445")"),
      line(R"(,"segment":"0x")"),
      line(R"(,"cache_hit":null)"),
      line(R"(,"cache_hit":truee)"),
      line(R"(,"backtrace":["0x1""0x2"])"),
      line(R"(,"backtrace":["0x1",])"),
      line(R"(,"backtrace":[1])"),
      line(R"(,"cause":"cap")"),
      line(R"(,"stream":"0x1\u0030")"),
      line(" "),
      line(R"(,"d\u0065v":1)"),
      R"({"seq":1,"t_ns":2,"tid":3,"dev":65536,"action":"alloc","ptr":"0x10","size":100})",
      R"({"seq":1,"t_ns":2,"tid":3,"dev":0,"action":"summary","ptr":"0x10","size":100})",
      R"({"seq":1,"t_ns":2,"tid":3,"dev":0,"action":"alloc","ptr":"0x10"})",
      R"({"seq":1, "t_ns":2,"tid":3,"dev":0,"action":"alloc","ptr":"0x10","size":100})",
      R"({"seq":1,"t_ns":2,"tid":3,"dev":0,"action":"Alloc","ptr":"0x10","size":100})",
      R"({"seq":1,"t_ns":2,"tid":3,"dev":0,"action":"","ptr":"0x10","size":100})",
      "{}",
      "{" + base,
      "{" + base + "}}",
      "{" + base + ",}"};
  for (const std::string& other : others) {
    INFO(other);
    CHECK(!fast_agrees(other));
  }
}

TEST_CASE("analyze fast line: mutated lines are taken only as the general path reads them") {
  std::mt19937 rng(27);
  const std::vector<std::string> lines = cudapool::test::written_lines();
  std::size_t taken = 0, tried = 0;
  for (int round = 0; round < 20000; ++round) {
    const std::string line = cudapool::test::edited(lines[rng() % lines.size()], rng);
    ++tried;
    taken += fast_agrees(line) ? 1 : 0;
  }
  CHECK(taken > 0);
  CHECK(taken < tried);
}

TEST_CASE("analyze fast line: the generator's and the fixtures' lines, and their mutations") {
  const std::vector<std::string> generated = cudapool::test::generated_lines();
  std::size_t taken = 0;
  for (const std::string& line : generated) taken += fast_agrees(line) ? 1 : 0;
  CHECK(taken > generated.size() * 9 / 10);
  for (const std::string& line : cudapool::test::fixture_lines()) fast_agrees(line);
  cudapool::test::check_mutations(cudapool::test::mutation_bases(generated), fast_agrees);
}
