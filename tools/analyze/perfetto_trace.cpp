// SPDX-License-Identifier: Apache-2.0
// tools/analyze/perfetto_trace.cpp: see perfetto_trace.h.
#include "tools/analyze/perfetto_trace.h"

#include "tools/analyze/device_layout.h"
#include "tools/analyze/written_field.h"

namespace cudapool::analyze {

namespace {

using A = log::LogAction;

// perfetto.py INSTANTS.
bool instant(int action) {
  switch (action) {
    case action_id(A::kOom):
    case action_id(A::kSegmentRefused):
    case action_id(A::kEmptyCache):
    case action_id(A::kSegmentAlloc):
    case action_id(A::kSegmentFree):
    case action_id(A::kSegmentMap):
    case action_id(A::kSegmentUnmap):
    case action_id(A::kContextDropped):
    case action_id(A::kStreamCreated):
    case action_id(A::kStreamFirstWork):
      return true;
    default:
      return false;
  }
}

// A field the trace shows: an integer, a string or a boolean (Python's type(x) in (int, str,
// bool)), but not a ctx of 0, "" or false.
bool shown(log::EventField f, const JsonValue& v) {
  const bool integer = v.type == JsonValue::Type::kNumber && v.is_integer();
  if (!integer && v.type != JsonValue::Type::kString && v.type != JsonValue::Type::kBool) {
    return false;
  }
  if (f != log::EventField::kCtx) return true;
  if (integer) return v.integer_text() != "0";
  return v.type == JsonValue::Type::kString ? !v.text.empty() : v.boolean;
}

}  // namespace

void PerfettoTrace::event(std::uint64_t, const Event& e, const DeviceState& d) {
  if (changes_state(e.action)) {
    auto& s = series_[e.dev];
    if (!s) s = std::make_unique<Downsampler>(max_points_);
    const Figure a = d.allocated_bytes.current, r = d.reserved_bytes.current;
    s->add(e.t_ns, Values{a, r, d.active_bytes.current, r - a});
  }
  if (!instant(e.action)) return;
  std::uint64_t& n = instant_counts_[{e.dev, std::string(e.action_name)}];
  if (++n > max_instants_) return;
  Instant i{e.t_ns, e.size, e.ptr, e.dev, std::string(e.action_name), {}};
  for (const log::EventField f : kShownFields) {
    std::optional<JsonValue> v = written_field(e, f);
    if (!v || !shown(f, *v)) continue;
    // The name: fields.def's literal; an integer written as Python reads it (json_out.h).
    i.fields.emplace_back(log::event_field_name(f).data(), std::move(*v));
  }
  instants_.push_back(std::move(i));
}

void PerfettoTrace::write(JsonOut& out, const ExportInputs& in) const {
  const LogAnalysis& a = in.followed;
  const std::optional<JsonValue>& header = in.log.header_;
  const bool replayed = in.replayed;
  const std::string& cut = in.cut;
  out.begin_object();
  out.key("replayed").boolean(replayed);
  out.key("header");
  if (header) {
    out.value(*header);
  } else {
    out.null();
  }
  out.key("replay_header");  // the replay's log's (a log of requests: replayed)
  if (replayed && a.header_) {
    out.value(*a.header_);
  } else {
    out.null();
  }
  out.key("ended_early");
  if (cut.empty()) {
    out.null();
  } else {
    out.str(cut);
  }
  out.key("events").num(a.events_);
  out.key("first_t_ns").opt(a.first_t_);
  out.key("device_notes").begin_array();
  for (const std::string& note : a.gate_.notes()) out.str(note);
  out.end_array();
  out.key("devices").begin_array();
  for (const auto& [dev, device] : a.devices_) {
    const DeviceState& d = device->state;
    out.begin_object();
    out.key("dev").num(dev);
    out.key("num_device_alloc").num(d.num_device_alloc);
    out.key("no_free_completed").boolean(d.no_free_completed());
    out.key("peak_allocated").num(d.allocated_bytes.peak);
    out.key("peak_reserved").num(d.reserved_bytes.peak);
    out.key("points");
    const auto s = series_.find(dev);
    if (s == series_.end()) {
      out.null();
    } else {
      out.begin_array();
      for (const Sample& p : s->second->points()) {
        out.begin_array().num(p.t);
        for (const Figure x : p.values) out.num(x);
        out.end_array();
      }
      out.end_array();
    }
    out.end_object();
  }
  out.end_array();
  out.key("instants").begin_array();
  for (const Instant& i : instants_) {
    out.begin_array().num(i.t_ns).str(i.action).num(i.dev).num(i.size).num(i.ptr);
    out.begin_object();
    for (const auto& [name, v] : i.fields) out.key(name).value(v);
    out.end_object().end_array();
  }
  out.end_array();
  out.key("instant_counts").begin_array();
  for (const auto& [key, n] : instant_counts_) {
    out.begin_array().num(key.first).str(key.second).num(n).end_array();
  }
  out.end_array();
  out.end_object();
}

}  // namespace cudapool::analyze
