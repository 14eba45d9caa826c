// SPDX-License-Identifier: Apache-2.0
// tools/analyze/report_json.cpp: see report_json.h (its leaks are leaks_json.cpp's).
#include "tools/analyze/report_json.h"

#include <algorithm>
#include <map>

#include "tools/analyze/oom_figures.h"
#include "tools/analyze/replayed.h"
#include "tools/analyze/stats_table.h"

namespace cudapool::analyze {

void write_peak(JsonOut& out, const std::optional<PeakReport>& p) {
  if (!p) {
    out.null();
    return;
  }
  out.begin_object().key("bytes").num(p->bytes).key("seq").num(p->seq).key("t_ns").num(p->t_ns);
  out.key("time_s").opt_real(p->time_s).end_object();
}

void write_fragmentation(JsonOut& out, const std::optional<Fragmentation>& f) {
  if (!f) {
    out.null();
    return;
  }
  out.begin_object().key("seq").num(f->seq).key("t_ns").num(f->t_ns);
  out.key("time_s").opt_real(f->time_s).key("reserved").num(f->reserved);
  out.key("allocated").num(f->allocated).key("fenced").num(f->fenced);
  out.key("free_cached").num(f->free_cached);
  out.key("largest_free_block").num(static_cast<Figure>(f->largest));
  out.key("largest_free_block_ptr");
  f->largest_at ? out.str(hex_text(*f->largest_at)) : out.null();
  out.key("largest_free_block_segment");
  f->largest_segment ? out.str(hex_text(*f->largest_segment)) : out.null();
  out.key("fragmentation").opt_real(f->fragmentation);
  out.key("regions").num(static_cast<std::uint64_t>(f->regions));
  out.key("blocks_leave_at").str(f->free_on_request ? "free_requested" : "free_completed");
  out.key("set_by").begin_object().key("action").str(f->set_by_map ? "segment_map"
                                                                   : "segment_alloc");
  out.key("ptr").str(hex_text(f->set_ptr)).key("size").num(f->set_size).end_object();
  out.key("before").begin_object().key("free_cached");
  f->free_before ? out.num(*f->free_before) : out.null();
  out.key("largest_free_block").num(static_cast<Figure>(f->largest_before)).end_object();
  out.key("request");
  if (f->request) {
    out.begin_object().key("size").num(f->request->size).key("block_size");
    out.num(f->request->block_size).key("seq").num(f->request->seq).end_object();
  } else {
    out.null();
  }
  out.end_object();
}

void write_lines(JsonOut& out, const std::vector<std::string>& lines) {
  out.begin_array();
  for (const std::string& s : lines) out.str(s);
  out.end_array();
}

namespace {

void ending_json(JsonOut& out, const Ending& e) {
  out.begin_object()
      .key("summary")
      .str(e.summary)
      .key("line")
      .opt(e.line)
      .key("requests_only")
      .boolean(e.requests_only)
      .key("clues")
      .begin_array();
  for (const std::string& c : e.clues) out.str(c);
  out.end_array().key("text").str(e.text).end_object();
}

}  // namespace

namespace {

void write_actions(JsonOut& out, const LogAnalysis& a) {
  std::map<std::string, std::uint64_t> actions(a.unknown_actions_.begin(),
                                               a.unknown_actions_.end());
  for (std::size_t i = 0; i < kActions; ++i) {
    if (a.action_counts_[i] != 0) {
      actions[log::action_name(static_cast<log::LogAction>(i))] = a.action_counts_[i];
    }
  }
  out.key("actions").begin_object();
  for (const auto& [name, count] : actions) out.key(name).num(count);
  out.end_object();
}

void write_problems(JsonOut& out, const LogAnalysis& a, std::size_t max_problems) {
  out.key("problems").begin_array();
  for (std::size_t i = 0; i < a.problems_.size() && i < max_problems; ++i) {
    const Problem& p = a.problems_[i];
    out.begin_object().key("line").num(p.line).key("what").str(p.what).end_object();
  }
  out.end_array();
}

void write_notes(JsonOut& out, const Report& r) {
  out.key("notes").begin_array();
  for (const std::string& n : r.notes) out.str(n);
  out.end_array();
}

std::uint64_t allocs(const LogAnalysis& a) {
  return a.action_counts_[static_cast<std::size_t>(log::LogAction::kAlloc)];
}

void write_devices(JsonOut& out, const Report& r) {
  out.key("devices").begin_object();
  for (const DeviceReport& d : r.devices) {
    out.key(std::to_string(d.dev)).begin_object();
    out.key("stats_source").str(d.from_summary ? "summary" : "events").key("stats").begin_object();
    for (const auto& [name, v] : d.stats) out.key(name).num(v);
    out.end_object().key("events").num(d.events).key("peak_allocated");
    write_peak(out, d.peak_allocated);
    out.key("peak_reserved");
    write_peak(out, d.peak_reserved);
    out.key("fragmentation");
    write_fragmentation(out, d.fragmentation);
    out.key("held");
    write_held_part(out, d.held);
    out.key("summary_table");
    write_lines(out, summary_table(d));
    out.end_object();
  }
  out.end_object();
}

// The replay of a log of requests only: its settings (the header's conf), its cache hits and per
// device what its summary line and events say (the statistics `cudapool demo` and `cudapool
// replay` print, the peaks, the fragmentation at its reserved peak).
void write_replay(JsonOut& out, const RequestReplay* replay) {
  out.key("replay");
  if (replay == nullptr) {
    out.null();
    return;
  }
  const LogAnalysis& ra = replay->analysis();
  const JsonValue* conf = ra.header_ ? ra.header_->find("conf") : nullptr;
  out.begin_object().key("settings");
  conf ? out.value(*conf) : out.null();
  out.key("settings_from").str("the log's header");
  out.key("cache_hits").num(ra.cache_hits_).key("allocs").num(allocs(ra));
  write_devices(out, replay->report());
  out.key("held");
  write_held_log(out, replay->report().held);
  out.end_object();
}

}  // namespace

void write_exited_normally(JsonOut& out, const Ending& e) {
  const std::optional<bool> x = exited_normally(e);
  x ? out.boolean(*x) : out.null();
}

void write_cache_hits(JsonOut& out, const LogAnalysis& a) {
  a.requests_only_ ? out.null() : out.num(a.cache_hits_);
}

void write_run_tallies(JsonOut& out, const LogAnalysis& a, const Report& r,
                       std::size_t max_problems) {
  out.key("lines").num(a.lines_).key("events").num(a.events_);
  write_actions(out, a);
  out.key("exited_normally");
  write_exited_normally(out, a.ending_);
  out.key("ending");
  ending_json(out, a.ending_);
  out.key("malformed_lines").num(a.malformed_).key("problem_count").num(a.problem_count_);
  out.key("cache_hits");
  write_cache_hits(out, a);
  out.key("allocs").num(allocs(a));
  write_notes(out, r);
  write_problems(out, a, max_problems);
}

void write_report(JsonOut& out, const LogAnalysis& a, const Report& r,
                  const RequestReplay* replay) {
  out.begin_object().key("schema").str(kReportSchema).key("log").str(r.log);
  out.key("header");
  a.header_ ? out.value(*a.header_) : out.null();
  // build_report's order (tests/oracle/report.py): `cudapool report --json` prints
  // this object as it is
  out.key("exited_normally");
  write_exited_normally(out, a.ending_);
  out.key("ending");
  ending_json(out, a.ending_);
  out.key("lines").num(a.lines_).key("events").num(a.events_);
  write_actions(out, a);
  out.key("cache_hits");
  write_cache_hits(out, a);
  out.key("malformed_lines").num(a.malformed_).key("problem_count").num(a.problem_count_);
  write_problems(out, a, kMaxProblems);
  out.key("summary");
  if (a.summary_) {
    out.begin_object();
    for (const char* k : {"seq", "t_ns", "events", "log_errors"}) {
      out.key(k);
      const JsonValue* v = a.summary_->find(k);
      v ? out.value(*v) : out.null();
    }
    out.key("line").num(a.summary_line_).end_object();
  } else {
    out.null();
  }
  write_devices(out, r);
  out.key("held");
  write_held_log(out, r.held);
  write_replay(out, replay);
  out.key("allocs").num(allocs(a));
  out.key("distinct_request_sizes").num(static_cast<std::uint64_t>(a.size_counts_.size()));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sizes(a.size_counts_.begin(),
                                                             a.size_counts_.end());
  const std::size_t top = std::min(kTop, sizes.size());
  std::partial_sort(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(top), sizes.end(),
                    [](const auto& x, const auto& y) {
                      return x.second != y.second ? x.second > y.second : x.first > y.first;
                    });
  out.key("top_request_sizes").begin_array();
  for (std::size_t i = 0; i < top; ++i) {
    out.begin_object().key("size").num(sizes[i].first).key("count").num(sizes[i].second);
    out.end_object();
  }
  out.end_array().key("largest_requests").begin_array();
  auto heap = a.largest_;
  std::vector<LargeRequest> largest;
  while (!heap.empty()) {
    largest.push_back(heap.top());
    heap.pop();
  }
  std::sort(largest.begin(), largest.end(), [](const LargeRequest& x, const LargeRequest& y) {
    return x.size != y.size ? x.size > y.size : x.line < y.line;
  });
  for (const LargeRequest& l : largest) {
    out.begin_object().key("size").num(l.size).key("dev").num(l.dev).key("seq").num(l.seq);
    out.key("t_ns").num(l.t_ns).key("time_s").opt_real(a.seconds(l.t_ns)).end_object();
  }
  out.end_array().key("ooms").begin_array();
  for (std::size_t i = 0; i < a.ooms_.size() && i < kTop; ++i) {
    const OomRecord& o = a.ooms_[i];
    out.begin_object().key("dev").num(o.dev).key("size").num(o.size).key("seq").num(o.seq);
    out.key("t_ns").num(o.t_ns).key("time_s").opt_real(a.seconds(o.t_ns));
    if (o.figures) {
      out.key("explained");
      write_figures(out, *o.figures);
      out.key("explanation");
      write_lines(out, explain(*o.figures, o.dev));
    }
    out.end_object();
  }
  out.end_array();
  out.key("leaks");
  write_leaks(out, a, r.leaks);
  out.key("impossible").begin_array();
  for (const Impossible& x : r.impossible) {
    out.begin_object().key("where").str(x.where).key("what").str(x.what).key("value").num(x.value);
    out.end_object();
  }
  out.end_array();
  write_notes(out, r);
  out.end_object();
}

RankRow rank_row(const LogAnalysis& a, const Report& r, std::size_t index) {
  RankRow row{
      r.header_rank.value_or(static_cast<Figure>(index)), r.header_rank.has_value(), r.log, {}};
  JsonOut out;
  out.begin_object()
      .key("rank")
      .num(row.rank)
      .key("rank_from")
      .str(row.from_header ? "header" : "order");
  out.key("log").str(r.log);
  const JsonValue* host = a.header_ ? a.header_->find("host") : nullptr;
  const JsonValue* pid = a.header_ ? a.header_->find("pid") : nullptr;
  out.key("host");
  host ? out.value(*host) : out.null();
  out.key("pid");
  pid ? out.value(*pid) : out.null();
  out.key("events").num(a.events_);
  out.key("ooms").num(a.action_counts_[static_cast<std::size_t>(log::LogAction::kOom)]);
  out.key("exited_normally");
  write_exited_normally(out, a.ending_);
  out.key("ending").str(a.ending_.summary).key("devices").begin_array();
  for (const DeviceReport& d : r.devices) {
    out.begin_object().key("dev").num(d.dev).key("peak_allocated");
    d.peak_allocated ? out.num(d.peak_allocated->bytes) : out.null();
    out.key("peak_reserved");
    d.peak_reserved ? out.num(d.peak_reserved->bytes) : out.null();
    out.key("ooms").num(d.ooms).key("events").num(d.events).end_object();
  }
  out.end_array().end_object();
  row.json = out.take();
  return row;
}

void write_ranks(JsonOut& out, std::vector<RankRow> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const RankRow& x, const RankRow& y) { return x.rank < y.rank; });
  out.key("ranks").begin_array();
  for (const RankRow& row : rows) {
    auto v = parse_json(row.json);
    out.value(*v);
  }
  out.end_array().key("notes").begin_array();
  std::vector<std::pair<Figure, std::vector<std::string>>> logs_of;
  for (const RankRow& row : rows) {
    if (logs_of.empty() || logs_of.back().first != row.rank)
      logs_of.emplace_back(row.rank, std::vector<std::string>{});
    logs_of.back().second.push_back(row.log);
  }
  for (const auto& [rank, logs] : logs_of) {
    if (logs.size() < 2) continue;
    std::string names;
    for (const std::string& l : logs) names += (names.empty() ? "" : ", ") + l;
    out.str("rank " + figure_text(rank) + " is named by " + std::to_string(logs.size()) +
            " logs: " + names);
  }
  out.end_array();
}

}  // namespace cudapool::analyze
