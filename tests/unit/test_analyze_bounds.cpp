// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_bounds.cpp: the engine's bounded tables (tools/analyze/analysis.h,
// sites.h; docs/analysis-format.md, "Memory"): past the unknown action names, the distinct
// request sizes and the allocation stacks it keeps, what is left out is counted and said in the
// report's notes, where the Python report (which keeps every one) says nothing.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/report.h"

using namespace cudapool::analyze;

namespace {

std::string event(std::uint64_t seq, const std::string& action, const std::string& extra = "") {
  return R"({"seq":)" + std::to_string(seq) + R"(,"t_ns":)" + std::to_string(seq) +
         R"(,"tid":1,"dev":0,"action":")" + action + R"(","ptr":"0x)" + std::to_string(seq) +
         R"(00","size":512)" + extra + "}";
}

std::vector<std::string> notes_after(LogAnalysis& a) {
  a.finish(LastLine{false, 10, "{}", true});
  return build_report(a, "L").notes;
}

bool said(const std::vector<std::string>& notes, const std::string& text) {
  return std::find(notes.begin(), notes.end(), text) != notes.end();
}

}  // namespace

TEST_CASE("analyze bounds: unknown action names past the table are counted and said") {
  LogAnalysis a;
  std::uint64_t seq = 0;
  for (std::size_t i = 0; i < kMaxUnknownActions + 3; ++i) {
    ++seq;
    a.feed(seq, event(seq, "made_up_" + std::to_string(i)));
  }
  ++seq;
  a.feed(seq, event(seq, "made_up_0"));  // a name kept: counted in its row
  CHECK(a.unknown_actions_.size() == kMaxUnknownActions);
  CHECK(a.unknown_actions_.at("made_up_0") == 2);
  const auto notes = notes_after(a);
  CHECK(said(notes,
             "more than 4096 unknown action names: 3 event(s) of further names are in no "
             "row of the actions"));
}

TEST_CASE("analyze bounds: allocation stacks past the sites' table belong to no site, said") {
  LogAnalysis a;
  std::uint64_t seq = 0;
  for (std::size_t i = 0; i < kMaxSites + 2; ++i) {
    ++seq;
    a.feed(seq, event(seq, "alloc",
                      R"(,"block_size":512,"backtrace":["0x1","0x)" + std::to_string(i) + "\"]"));
  }
  ++seq;  // a stack already seen still counts for its site
  a.feed(seq, event(seq, "alloc", R"(,"block_size":512,"backtrace":["0x1","0x0"])"));
  CHECK(a.sites_.stacks_over_limit() == 2);
  CHECK(a.sites_.allocs(0) == 2);
  const auto notes = notes_after(a);
  CHECK(said(notes,
             "more than 65536 distinct allocation stacks: 2 allocation(s) of further "
             "stacks belong to no site"));
}

TEST_CASE(
    "analyze bounds: request sizes past the table are said (the count as the pass keeps it)") {
  // 4 M distinct sizes would take 200 MB here: the count the pass keeps is set instead.
  LogAnalysis a;
  a.feed(1, event(1, "alloc", R"(,"block_size":512)"));
  CHECK(a.sizes_not_counted_ == 0);
  a.sizes_not_counted_ = 7;
  const auto notes = notes_after(a);
  CHECK(said(notes,
             "more than 4194304 distinct request sizes: 7 allocation(s) of further sizes "
             "are left out of the request-size tables"));
}
