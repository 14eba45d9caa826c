// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_replay_fast_line.cpp: the replay's fast path for the writers' event lines
// (parse_log_line through log/read/writer_line.h) gives exactly the ParsedLine the general path
// gives the same line (kind, every LogEvent field, problem): on the writer's lines for every
// action, bench/make_training_log's lines, the fixtures' lines, and each of them mutated (keys
// reordered, white space, escapes, leading zeros, long hex strings, dev and ctx out of range, keys
// repeated or missing, huge numbers, random edits), where it either agrees or leaves the line to
// the general path. A line that starts with a space is never the fast path's: that is how the
// general path's answer is had.
#include <random>
#include <string>
#include <vector>

#include "log/read/writer_line.h"
#include "tests/unit/catch.h"
#include "tests/unit/writer_lines.h"
#include "tools/replay/log_event.h"

using namespace cudapool::replay;

namespace {

std::string parsed_text(const ParsedLine& p) {
  const LogEvent& e = p.event;
  return std::to_string(static_cast<int>(p.kind)) + " " + std::to_string(static_cast<int>(e.kind)) +
         " dev " + std::to_string(e.device) + " ctx " + std::to_string(e.ctx) + " tid " +
         std::to_string(e.tid) + " ptr " + std::to_string(e.ptr) + " size " +
         std::to_string(e.size) + " stream " + std::to_string(e.stream) + " t " +
         std::to_string(e.t_ns) + (e.requested_from_outside ? " outside" : "") + " [" + p.problem +
         "]";
}

// Whether the fast path takes the line; either way, that parse_log_line answers as the general
// path does.
bool fast_agrees(const std::string& line) {
  LogHeader fast_header, general_header;
  const ParsedLine fast = parse_log_line(line, &fast_header);
  const ParsedLine general = parse_log_line(" " + line, &general_header);
  INFO(line);
  CHECK(parsed_text(fast) == parsed_text(general));
  cudapool::log::WriterLine w;
  const bool taken = cudapool::log::scan_writer_line(line, cudapool::log::kEveryEventField, &w);
  if (taken) CHECK(general.kind == LineKind::kEvent);
  return taken;
}

// How many of the lines the fast path takes (each agreeing).
std::size_t taken(const std::vector<std::string>& lines) {
  std::size_t n = 0;
  for (const std::string& line : lines) n += fast_agrees(line) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("replay fast line: the writer's, the generator's and the fixtures' lines") {
  const std::vector<std::string> written = cudapool::test::written_lines();
  CHECK(taken(written) == written.size());  // every action, every optional field
  const std::vector<std::string> generated = cudapool::test::generated_lines();
  // All but each log's header and summary.
  CHECK(taken(generated) == generated.size() - 4);
  const std::vector<std::string> fixtures = cudapool::test::fixture_lines();
  const std::size_t n = taken(fixtures);
  CHECK(n > fixtures.size() / 2);
  CHECK(n < fixtures.size());
}

TEST_CASE("replay fast line: mutated lines are taken only as the general path reads them") {
  const std::vector<std::string> bases =
      cudapool::test::mutation_bases(cudapool::test::generated_lines());
  cudapool::test::check_mutations(bases, fast_agrees);
  std::mt19937 rng(27);
  std::vector<std::string> edited;
  for (int round = 0; round < 20000; ++round) {
    edited.push_back(cudapool::test::edited(bases[rng() % bases.size()], rng));
  }
  const std::size_t n = taken(edited);
  CHECK(n > 0);
  CHECK(n < edited.size());
}
