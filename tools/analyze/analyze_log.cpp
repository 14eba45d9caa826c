// tools/analyze/analyze_log.cpp: see analyze_log.h.
#include "tools/analyze/analyze_log.h"

#include "log/read/line_reader.h"
#include "tools/analyze/input_tap.h"
#include "tools/analyze/page_json.h"

namespace cudapool::analyze {

namespace {

// What an export follows the log with (analyze_log.h LogResult::hook), or null.
std::unique_ptr<EventHook> export_hook(const AnalysisOptions& o) {
  if (o.perfetto) return std::make_unique<PerfettoTrace>(o.perfetto_points, o.perfetto_instants);
  if (o.memviz) return std::make_unique<MemvizTrace>(o.memviz_entries);
  return nullptr;
}

}  // namespace

std::unique_ptr<LogResult> analyze_log(std::istream& source, const std::string& name,
                                       const std::string& path, std::size_t index,
                                       const AnalysisOptions& options,
                                       const std::function<std::string()>& cut) {
  auto result = std::make_unique<LogResult>();
  result->analysis.options_ = options;
  LogAnalysis& a = result->analysis;
  InputTap tap(source);
  std::istream in(&tap);
  // Until a pool decision shows in the first kScanLines lines, the log may be one of requests:
  // the replay reads along, and is dropped at the first decision.
  auto replay = std::make_unique<RequestReplay>(path);
  result->hook = export_hook(options);
  std::unique_ptr<EventHook> replay_trace = export_hook(options);
  a.hook = result->hook.get();
  replay->hook(replay_trace.get());
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
          replay_trace.reset();
          return;
        }
        if (n == kScanLines) a.watch_pool_decisions = false;
        replay->feed(n, line);
      },
      [&](std::uint64_t n) {
        a.feed_too_long(n);
        if (!decided) replay->feed_too_long(n);
      });
  result->cut = cut ? cut() : std::string();
  a.finish(tap.last_line(), result->cut);
  if (result->hook) result->hook->finish();
  result->bytes = tap.bytes();
  if (replay) {
    replay->finish();
    result->replay = std::move(replay);
    if (replay_trace) {
      replay_trace->finish();
      a.hook = nullptr;
      result->hook = std::move(replay_trace);
    }
  }
  result->report = build_report(a, name);
  result->row = rank_row(a, result->report, index);
  return result;
}

std::string analysis_document(const std::vector<std::unique_ptr<LogResult>>& logs, bool page) {
  JsonOut out;
  out.begin_object().key("schema").str(kAnalysisSchema).key("logs").begin_array();
  std::vector<RankRow> rows;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const LogResult& r = *logs[i];
    out.begin_object().key("report");
    write_report(out, r.analysis, r.report);
    if (page) {
      out.key("page");
      ReplayPart replay;
      if (r.replay) {
        replay.analysis = &r.replay->analysis();
        replay.report = &r.replay->report();
      }
      write_page(out, r.analysis, r.report, r.row, i, replay);
    }
    const LogAnalysis& followed = r.replay ? r.replay->analysis() : r.analysis;
    if (const auto* p = dynamic_cast<const PerfettoTrace*>(r.hook.get())) {
      out.key("perfetto");
      p->write(out, followed, r.analysis.header_, r.replay != nullptr, r.cut);
    } else if (const auto* m = dynamic_cast<const MemvizTrace*>(r.hook.get())) {
      out.key("memviz");
      m->write(out, followed, r.replay != nullptr, r.cut);
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
