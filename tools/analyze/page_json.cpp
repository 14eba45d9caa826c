// SPDX-License-Identifier: Apache-2.0
// tools/analyze/page_json.cpp: see page_json.h.
#include "tools/analyze/page_json.h"

#include <algorithm>
#include <map>

#include "tools/analyze/frames.h"
#include "tools/analyze/page_parts.h"
#include "tools/analyze/segment_map.h"

namespace cudapool::analyze {

namespace {

constexpr std::size_t kMaxPageLeaks = 200;  // leaks listed one by one (all are grouped)
constexpr std::size_t kMaxPageProblems = 20;
const char* const kRunFields[] = {"executable", "argv", "pid",         "host",   "start_time",
                                  "version",    "conf", "conf_source", "options"};

const JsonValue* header_field(const LogAnalysis& a, const char* name) {
  return a.header_ ? a.header_->find(name) : nullptr;
}

void value_or_null(JsonOut& out, const JsonValue* v) {
  v ? out.value(*v) : out.null();
}

// A device's timeline (timeline.py result()), or null for a device without state changes.
void timeline(JsonOut& out, const LogAnalysis& a, const Device& d) {
  const DeviceTimeline& tl = d.timeline;
  if (tl.changes == 0) {
    out.null();
    return;
  }
  const std::vector<Sample> points = tl.samples.points();
  const std::uint64_t t0 = *a.first_t_;
  const DeviceState& s = d.state;
  out.begin_object().key("t").begin_array();
  for (const Sample& p : points) out.real(seconds_between(p.t, t0));
  out.end_array();
  const auto column = [&](const char* name, std::size_t k, bool present) {
    out.key(name);
    if (!present) {
      out.null();
      return;
    }
    out.begin_array();
    for (const Sample& p : points) out.num(p.values[k]);
    out.end_array();
  };
  column("allocated", 0, true);
  column("reserved", 1, s.num_device_alloc > 0 || s.reserved_bytes.peak > 0);
  column("active", 2, !s.no_free_completed());
  out.key("changes").num(tl.changes).key("points").num(static_cast<std::uint64_t>(points.size()));
  out.key("exact").boolean(points.size() == tl.changes);
  out.key("bucket_s").real(static_cast<double>(tl.samples.width()) / 1e9);
  out.key("marks").begin_object();
  for (const auto& [action, times] : tl.marks) {
    out.key(action).begin_array();
    for (const std::uint64_t t : times) out.real(seconds_between(t, t0));
    out.end_array();
  }
  out.end_object().key("offset_s").real(0.0).end_object();
}

void maps(JsonOut& out, const LogAnalysis& a, const Device* d, const DeviceReport& dr) {
  out.begin_object();
  if (d != nullptr && d->state.num_device_alloc != 0) {
    const bool on_request = d->state.no_free_completed();
    if (d->layout.reserved_peak_reached() && dr.peak_reserved) {
      out.key("peak").begin_object();
      write_segment_map(out, d->layout.at_reserved_peak(), on_request);
      out.key("seq").num(dr.peak_reserved->seq).key("time_s").opt_real(dr.peak_reserved->time_s);
      out.end_object();
    }
    out.key("exit").begin_object();
    write_segment_map(out, d->layout.live(), on_request);
    out.end_object();
  }
  (void)a;
  out.end_object();
}

void sites_at_peak(JsonOut& out, const LogAnalysis& a, const Device* d) {
  if (d == nullptr || a.sites_.size() == 0 || !a.options_.sites || !d->state.peak_allocated ||
      !d->layout.allocated_peak_reached()) {
    out.null();
    return;
  }
  const auto& held = d->layout.at_allocated_peak().held;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (held[i].first > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {  // Python sites first
    return site_before(a.sites_, static_cast<std::int32_t>(x) - 1, static_cast<std::int32_t>(y) - 1,
                       held[x].second, held[y].second);
  });
  out.begin_array();
  for (std::size_t k = 0; k < order.size() && k < kTopSites; ++k) {
    const std::size_t i = order[k];
    out.begin_object().key("site").num(static_cast<long long>(i) - 1);
    out.key("count").num(static_cast<long long>(held[i].first)).key("bytes").num(held[i].second);
    out.end_object();
  }
  out.end_array();
}

void device_part(JsonOut& out, const LogAnalysis& a, const DeviceReport& dr, bool full) {
  const auto it = a.devices_.find(dr.dev);
  const Device* d = it == a.devices_.end() ? nullptr : it->second.get();
  out.begin_object();
  if (full) {
    const JsonValue* named = nullptr;
    if (const JsonValue* devices = header_field(a, "devices"); devices && devices->is_array()) {
      for (const JsonValue& x : devices->items) {
        const JsonValue* id = x.is_object() ? x.find("id") : nullptr;
        if (id != nullptr && id->integer_text() == std::to_string(dr.dev)) named = &x;
      }
    }
    out.key("name");
    value_or_null(out, named ? named->find("name") : nullptr);
    out.key("total_memory");
    value_or_null(out, named ? named->find("total_memory") : nullptr);
  }
  out.key("peak_allocated");
  write_peak(out, dr.peak_allocated);
  out.key("peak_reserved");
  write_peak(out, dr.peak_reserved);
  out.key("fragmentation");
  write_fragmentation(out, dr.fragmentation);
  if (full)
    out.key("events")
        .num(dr.events)
        .key("stats_source")
        .str(dr.from_summary ? "summary" : "events");
  out.key("timeline");
  if (d != nullptr) {
    timeline(out, a, *d);
  } else {
    out.null();
  }
  out.key("maps");
  maps(out, a, d, dr);
  if (full) {
    out.key("sites_at_peak");
    sites_at_peak(out, a, d);
  }
  out.end_object();
}

}  // namespace

void write_page(JsonOut& out, const LogAnalysis& a, const Report& r, const RankRow& row,
                std::size_t index, const ReplayPart& replay) {
  out.begin_object().key("log").str(r.log).key("index").num(static_cast<std::uint64_t>(index));
  out.key("rank").num(row.rank).key("rank_from").str(row.from_header ? "header" : "order");
  out.key("run").begin_object();
  for (const char* f : kRunFields) {
    out.key(f);
    value_or_null(out, header_field(a, f));
  }
  out.key("devices");
  if (const JsonValue* d = header_field(a, "devices"); d && d->is_array() && !d->items.empty()) {
    out.value(*d);
  } else {
    out.begin_array().end_array();
  }
  out.key("duration_s");
  a.first_t_ ? out.real(seconds_between(*a.last_t_, *a.first_t_)) : out.null();
  write_run_tallies(out, a, r, kMaxPageProblems);
  out.end_object();
  out.key("devices").begin_object();
  for (const DeviceReport& dr : r.devices) {
    out.key(std::to_string(dr.dev));
    device_part(out, a, dr, true);
  }
  out.end_object();
  bool has_layout = false;
  for (const auto& [dev, d] : a.devices_) has_layout |= d->state.num_device_alloc != 0;
  const bool own = replay.analysis == nullptr;
  out.key("layout_source");
  own&& has_layout ? out.str("log") : !own ? out.str("replay") : out.null();
  out.key("layout_note");
  own && !has_layout ? out.str("the log has no segment events") : out.null();
  out.key("replay");
  if (own) {
    out.null();
  } else {
    const LogAnalysis& ra = *replay.analysis;
    out.begin_object().key("conf");
    value_or_null(out, header_field(ra, "conf"));
    out.key("events").num(ra.events_).key("first_t_ns").opt(ra.first_t_);
    out.key("cache_hits").num(ra.cache_hits_);
    out.key("devices").begin_object();
    for (const DeviceReport& dr : replay.report->devices) {
      out.key(std::to_string(dr.dev));
      device_part(out, ra, dr, false);
    }
    out.end_object().end_object();
  }
  out.key("clock").begin_object();
  for (const char* f : {"start_unix_ns", "start_t_ns"}) {
    out.key(f);
    value_or_null(out, header_field(a, f));
  }
  out.key("first_t_ns").opt(a.first_t_).end_object();
  write_page_ooms(out, a);
  out.key("oom_count").num(a.action_counts_[static_cast<std::size_t>(log::LogAction::kOom)]);
  const Frames frames(a.summary_ ? &*a.summary_ : nullptr);
  write_page_leaks(out, a, r, frames, kMaxPageLeaks);
  write_page_sites(out, a, frames);
  out.end_object();
}

}  // namespace cudapool::analyze
