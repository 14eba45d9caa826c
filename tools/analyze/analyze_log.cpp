// SPDX-License-Identifier: Apache-2.0
// tools/analyze/analyze_log.cpp: see analyze_log.h.
#include "tools/analyze/analyze_log.h"

#include "log/read/line_reader.h"
#include "tools/analyze/input_tap.h"
#include "tools/analyze/memviz_trace.h"
#include "tools/analyze/page_json.h"
#include "tools/analyze/perfetto_trace.h"

namespace cudapool::analyze {

namespace {

// What an export follows the log with (LogAnalysis::hook), or null.
std::unique_ptr<EventHook> export_hook(const AnalysisOptions& o) {
  if (o.perfetto) return std::make_unique<PerfettoTrace>(o.perfetto_points, o.perfetto_instants);
  if (o.memviz) return std::make_unique<MemvizTrace>(o.memviz_entries);
  return nullptr;
}

}  // namespace

std::unique_ptr<LogResult> analyze_log(const LogSource& source, const AnalysisOptions& options) {
  auto result = std::make_unique<LogResult>();
  result->analysis.options_ = options;
  LogAnalysis& a = result->analysis;
  InputTap tap(source.in);
  std::istream in(&tap);
  // Until a pool decision shows in the first kScanLines lines, the log may be one of requests:
  // the replay reads along, and is dropped at the first decision.
  auto replay = std::make_unique<RequestReplay>(source.path, options.level);
  // The export follows the log, or its replay: each analysis owns the one that follows it, until
  // the log's kind is known and one of them goes.
  a.hook = export_hook(options);
  replay->follow(export_hook(options));
  bool decided = false;
  a.watch_pool_decisions = true;
  cudapool::log::for_each_line(
      in,
      [&](std::uint64_t n, std::string_view line) {
        a.feed(n, line);
        if (decided) return;
        if (n <= kScanLines && a.pool_decision()) {
          decided = true;
          a.watch_pool_decisions = false;
          replay.reset();
          return;
        }
        if (n == kScanLines) {  // a log of requests: its export follows the replay alone
          a.watch_pool_decisions = false;
          a.hook.reset();
        }
        replay->feed(n, line);
      },
      [&](std::uint64_t n) {
        a.feed_too_long(n);
        if (!decided) replay->feed_too_long(n);
      });
  if (replay) a.hook.reset();  // a log of requests shorter than kScanLines lines
  // Allocs and not one pool decision: requests only, by construction (the shim writes each
  // alloc's block_size); a log without allocs (a header, a run killed at once) is not one.
  a.requests_only_ =
      replay != nullptr && a.action_counts_[static_cast<std::size_t>(log::LogAction::kAlloc)] != 0;
  result->cut = source.cut ? source.cut() : std::string();
  a.finish(tap.last_line(), result->cut);
  result->bytes = tap.bytes();
  if (replay) {
    replay->finish();
    result->replay = std::move(replay);
  }
  result->report = build_report(a, source.name);
  result->row = rank_row(a, result->report, source.index);
  return result;
}

std::string analysis_document(const std::vector<std::unique_ptr<LogResult>>& logs, bool page) {
  JsonOut out;
  out.begin_object().key("schema").str(kAnalysisSchema).key("logs").begin_array();
  std::vector<RankRow> rows;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const LogResult& r = *logs[i];
    out.begin_object().key("report");
    write_report(out, r.analysis, r.report, r.replay.get());
    if (page) {
      out.key("page");
      ReplayPart replay;
      if (r.replay) {
        replay.analysis = &r.replay->analysis();
        replay.report = &r.replay->report();
      }
      write_page(out, r.analysis, r.report, r.row, i, replay);
    }
    const LogAnalysis& followed = r.followed();
    if (const EventHook* e = followed.hook.get()) {  // an export
      out.key(e->key());
      e->write(out, ExportInputs{followed, r.analysis, r.replay != nullptr, r.cut});
    }
    out.end_object();
    rows.push_back(r.row);
  }
  out.end_array();
  write_ranks(out, std::move(rows));
  out.end_object();
  std::string text = out.take();
  text += '\n';
  return text;
}

}  // namespace cudapool::analyze
