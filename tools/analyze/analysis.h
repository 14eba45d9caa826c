// SPDX-License-Identifier: Apache-2.0
// tools/analyze/analysis.h: the engine's one pass over one log. Each line goes in once
// (feed()); what every output needs comes out at the end: the reader's tallies and problems
// (tests/oracle/reader.py), the header and summary lines checked (line_checks.h), per
// device the counters and peaks (accounting.h), the layout and its copies at the peaks
// (device_layout.h), the timeline (timeline.h), the bytes held over time (held.h), and for the
// log the request sizes, oom events, seq gaps, allocation sites and actions, and the Python
// frames and stacks its definition lines give (python_stacks.h). Memory follows the live state
// (blocks and segments alive, their copies at the peaks) and bounded tables, never the log's
// length. Not here: the outputs (report_json.h, page_json.h), the replay of a log of requests
// (replayed.h).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "log/record.h"
#include "tools/analyze/accounting.h"
#include "tools/analyze/backtraces.h"
#include "tools/analyze/device_gate.h"
#include "tools/analyze/device_layout.h"
#include "tools/analyze/ending.h"
#include "tools/analyze/event_hook.h"
#include "tools/analyze/held.h"
#include "tools/analyze/json_value.h"
#include "tools/analyze/log_line.h"
#include "tools/analyze/oom_figures.h"
#include "tools/analyze/python_stacks.h"
#include "tools/analyze/sites.h"
#include "tools/analyze/timeline.h"

namespace cudapool::analyze {

inline constexpr std::size_t kMaxProblems = 100;  // listed with their lines (all are counted)
inline constexpr std::size_t kTop = 10;           // request-size rows, oom events reported
// Distinct request sizes counted, distinct unknown action names kept: bounded tables (past them,
// a note says so).
inline constexpr std::size_t kMaxRequestSizes = std::size_t{1} << 22;
inline constexpr std::size_t kMaxUnknownActions = 4096;
inline constexpr std::size_t kActions = static_cast<std::size_t>(log::LogAction::kCount);

struct Problem {
  std::uint64_t line;
  std::string what;
};

struct Device {
  explicit Device(int id) : state(id) {}
  DeviceState state;
  DeviceLayout layout;
  DeviceTimeline timeline;
  HeldDevice held;  // its bytes over the log's time (held.h)
};

struct LargeRequest {
  std::uint64_t size, line, seq, t_ns;
  int dev;
  // A min-heap on (size, -line) keeps the largest, the earlier of equal ones (accounting.py).
  bool operator>(const LargeRequest& o) const {
    return size != o.size ? size > o.size : line < o.line;
  }
};

struct AnalysisOptions {
  bool sites = true;          // allocation sites (the page of a log; not of a replay's log)
  bool request_sizes = true;  // the table of request sizes
  // The Perfetto trace's data (perfetto_trace.h), with its limits.
  bool perfetto = false;
  std::size_t perfetto_points = 20000, perfetto_instants = 2000;
  // Or the memory_viz snapshot's (memviz_trace.h): each device's last memviz_entries (0: all).
  bool memviz = false;
  std::size_t memviz_entries = 100000;
  // The level whose time above the report gives (held_report.h); by default half the peak.
  HeldLevel level;
};

class LogAnalysis {
 public:
  explicit LogAnalysis(AnalysisOptions options = {}) : options_(options) {}

  // One line of the log, without its newline.
  void feed(std::uint64_t line_number, std::string_view line);
  // An event line already decoded (the in-process replay's decisions, replayed.h): as feed() of
  // its line, which decodes to e.
  void feed_event(std::uint64_t line_number, const Event& e);
  // A line longer than the 64 MiB limit (line_reader.h).
  void feed_too_long(std::uint64_t line_number);
  // The input's end: how its last line ends (then the hook's finish()).
  void finish(const LastLine& last, const std::string& cut = "");  // cut: ending.h

  // Whether the line just fed was a pool decision (replayed.py has_pool_decisions: a JSON
  // object whose action is segment_alloc or segment_map, or an alloc with a block_size); asked
  // only while watch_pool_decisions is set.
  bool pool_decision() const { return pool_decision_; }
  bool watch_pool_decisions = false;
  // Given every event taken, after it is counted (an export that follows the log: event_hook.h);
  // owned here, with the analysis it follows.
  std::unique_ptr<EventHook> hook;
  // Whether the input held any header, event or summary line: else it is not a log.
  bool holds_a_log() const { return header_ || events_ != 0 || summary_; }
  std::string first_problem_text() const;

  // ---- what the outputs read ----
  std::uint64_t lines_ = 0, blank_lines_ = 0, events_ = 0, events_after_summary_ = 0;
  std::uint64_t problem_count_ = 0, malformed_ = 0;
  std::vector<Problem> problems_;
  std::vector<std::string> notes_;
  std::optional<JsonValue> header_, summary_;
  std::uint64_t header_line_ = 0, summary_line_ = 0;
  DeviceGate gate_;
  std::map<int, std::unique_ptr<Device>> devices_;
  std::array<std::uint64_t, kActions> action_counts_{};
  std::map<std::string, std::uint64_t> unknown_actions_;
  std::uint64_t unknown_action_names_dropped_ = 0;
  std::optional<std::uint64_t> first_t_, last_t_, last_seq_;
  // The log's clock for the bytes held over time: the latest t_ns so far (never back), and what
  // all devices together held (held.h).
  std::uint64_t clock_ = 0;
  HeldRun held_;
  SeqGaps gaps_;
  std::uint64_t cache_hits_ = 0;
  // A log of requests only: allocs and no pool decision (analyze_log.cpp, before finish()). Its
  // cache hits are unknown, its missing summary line no sign of a kill (ending.h).
  bool requests_only_ = false;
  std::unordered_map<std::uint64_t, std::uint64_t> size_counts_;
  std::uint64_t sizes_not_counted_ = 0;  // allocs of sizes past kMaxRequestSizes distinct ones
  std::priority_queue<LargeRequest, std::vector<LargeRequest>, std::greater<LargeRequest>> largest_;
  std::vector<OomRecord> ooms_;  // the first kMaxPageOoms (the report shows the first kTop)
  std::size_t marks_ = 0;
  BacktraceTable backtraces_;
  PythonStacks python_;  // the log's Python frames and stacks (definition lines)
  Sites sites_;
  Ending ending_;
  AnalysisOptions options_;

  // Seconds since the log's first event (the report's time_s).
  std::optional<double> seconds(std::uint64_t t_ns) const;
  bool no_free_completed(int dev) const;

 private:
  void problem(std::uint64_t line, std::string what, bool malformed = false);
  void header_line(std::uint64_t line, JsonValue obj);
  void summary_line(std::uint64_t line, JsonValue obj);
  void event_line(std::uint64_t line, const Event& e);  // a valid event line: counted, admitted
  void event(std::uint64_t line, const Event& e);
  Device& device(int dev);

  LineDecoder decoder_;
  bool pool_decision_ = false;
  // The last malformed line and its problem should it be the input's last line without a
  // newline (a fault at its very end is placed differently), which only the end tells.
  std::uint64_t last_malformed_ = 0;
  std::string last_malformed_if_last_;
  std::uint64_t skipped_seen_ = 0;
  Device* last_device_ = nullptr;
  int last_dev_ = -1;
};

}  // namespace cudapool::analyze
