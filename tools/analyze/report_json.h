// SPDX-License-Identifier: Apache-2.0
// tools/analyze/report_json.h: the report of one log as the JSON object `cudapool report --json`
// prints ("schema": "cudapool.report/1", docs/log-format.md "Who reads what"; field by field in
// docs/analysis-format.md), its row of the cross-rank table, and for several logs the table's
// notes (report.py several()); the bytes held over time are held_report.h's JSON, the leaks'
// leaks_json.cpp's. Not here: the figures (report.h, analysis.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/report.h"

namespace cudapool::analyze {

class Frames;
class RequestReplay;

inline constexpr const char* kReportSchema = "cudapool.report/1";

// replay: a log of requests only's replay (replayed.h), or null: the report's "replay" object,
// the figures the log cannot have (reserved bytes, segments, fragmentation, cache hits) as the
// pool replayed them under the header's settings; null without one.
void write_report(JsonOut& out, const LogAnalysis& a, const Report& r,
                  const RequestReplay* replay = nullptr);

// Parts the page writes too (page_json.h).
void write_peak(JsonOut& out, const std::optional<PeakReport>& p);
void write_fragmentation(JsonOut& out, const std::optional<Fragmentation>& f);
// exited_normally: true, false or null (ending.h exited_normally()).
void write_exited_normally(JsonOut& out, const Ending& e);
// cache_hits: the count, or null for a log of requests only (its cache hits are not known).
void write_cache_hits(JsonOut& out, const LogAnalysis& a);
// lines, events, actions, exited_normally, ending, malformed_lines, problem_count, cache_hits,
// allocs, notes, problems (the first max_problems).
void write_run_tallies(JsonOut& out, const LogAnalysis& a, const Report& r,
                       std::size_t max_problems);
// Lines of text as a JSON array of strings.
void write_lines(JsonOut& out, const std::vector<std::string>& lines);
// The blocks alive at the end by site and size ("by_site": report.h AliveGroup): the rule, per
// kind its groups, blocks and bytes, and the first kAliveGroupsListed groups; with frames, their
// backtraces as the frames' texts (frames.h).
void write_alive_groups(JsonOut& out, const LogAnalysis& a, const LeaksReport& lk,
                        const Frames* frames = nullptr);
// A leak entry; with frames, its backtrace as the frames' texts (frames.h).
void write_leak_entry(JsonOut& out, const LeakEntry& e, const Frames* frames = nullptr);
// The report's "leaks" object (written by leaks_json.cpp, with the two above).
void write_leaks(JsonOut& out, const LogAnalysis& a, const LeaksReport& lk);

// One log's row of the cross-rank table; index: its place in the order given.
struct RankRow {
  Figure rank;
  bool from_header;
  std::string log;
  std::string json;  // the row, written
};
RankRow rank_row(const LogAnalysis& a, const Report& r, std::size_t index);

// The rows sorted by rank (stably) and the notes of ranks several logs name.
void write_ranks(JsonOut& out, std::vector<RankRow> rows);

}  // namespace cudapool::analyze
