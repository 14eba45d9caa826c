// SPDX-License-Identifier: Apache-2.0
// tools/analyze/report.cpp: see report.h.
#include "tools/analyze/report.h"

#include <algorithm>
#include <set>

namespace cudapool::analyze {

namespace {

constexpr std::size_t kImpossibleShown = 6;  // impossible figures named in one device's note

const char* const kImpliedArrays[] = {"allocation",   "allocated_bytes", "active",
                                      "active_bytes", "requested_bytes", "reserved_bytes",
                                      "segment"};
const char* const kFields[] = {"current", "peak", "allocated", "freed"};

void add_counter(std::vector<std::pair<std::string, Figure>>& out, const char* name,
                 const Counter& c) {
  const Figure values[] = {c.current, c.peak, c.allocated, c.freed};
  for (int i = 0; i < 4; ++i) out.emplace_back(std::string(name) + ".all." + kFields[i], values[i]);
}

// accounting.py Device.implied_stats().
std::vector<std::pair<std::string, Figure>> implied_stats(const DeviceState& d) {
  std::vector<std::pair<std::string, Figure>> out;
  const bool on_request = d.no_free_completed();
  const Counter* counters[] = {&d.allocation,
                               &d.allocated_bytes,
                               on_request ? &d.allocation : &d.active_n,
                               on_request ? &d.allocated_bytes : &d.active_bytes,
                               on_request ? &d.requested_until_free : &d.requested_bytes,
                               &d.reserved_bytes,
                               &d.segment};
  for (int i = 0; i < 7; ++i) add_counter(out, kImpliedArrays[i], *counters[i]);
  out.emplace_back("num_ooms", d.num_ooms);
  out.emplace_back("num_device_alloc", d.num_device_alloc);
  out.emplace_back("num_device_free", d.num_device_free);
  return out;
}

std::string text(Figure v) {
  return figure_text(v);
}

// The log's span for the bytes held over time: its first event to its last (held.h); none
// without events.
std::optional<std::uint64_t> held_span(const LogAnalysis& a) {
  if (!a.first_t_) return std::nullopt;
  return a.clock_ - *a.first_t_;
}

// All devices' bytes held over time, together.
HeldLog held_log(const LogAnalysis& a, const std::vector<DeviceReport>& devices) {
  HeldLog h;
  h.level = a.options_.level;
  if (a.first_t_) {
    h.from_t_ns = *a.first_t_;
    h.to_t_ns = a.clock_;
  }
  const HeldRun& run = a.held_;
  if (run.peaked) h.peak_reserved = HeldPeak{run.peak, run.peak_seq, run.peak_t_ns};
  bool allocated = false;
  for (const DeviceReport& d : devices) allocated |= d.peak_allocated.has_value();
  h.all = held_part(run.sum, h.level, run.peaked ? std::optional<Figure>(run.peak) : std::nullopt,
                    allocated, held_span(a));
  return h;
}

// A note for each mean that 128 bits could not hold (held_report.h).
void overflow_notes(const std::string& where, const HeldPart& p, std::vector<std::string>& notes) {
  const char* const what[] = {"allocated", "reserved"};
  const bool over[] = {p.allocated && p.allocated->overflowed,
                       p.reserved && p.reserved->overflowed};
  for (int i = 0; i < 2; ++i) {
    if (!over[i]) continue;
    notes.push_back(where + ": the mean of its " + what[i] +
                    " bytes over time is left out: bytes x time reached 2**127 (the log is "
                    "inconsistent)");
  }
}

DeviceReport device_report(const LogAnalysis& a, int dev, const JsonValue* entry,
                           std::vector<std::string>& notes) {
  static const DeviceState kEmpty(0);
  const auto it = a.devices_.find(dev);
  const Device* dv = it == a.devices_.end() ? nullptr : it->second.get();
  const DeviceState& d = dv ? dv->state : kEmpty;
  const std::string name = "device " + std::to_string(dev);
  DeviceReport r{dev, false, {}, d.events, std::nullopt, std::nullopt, std::nullopt, d.num_ooms};
  if (d.contexts.size() > 1) {
    notes.push_back(name + ": events of " + std::to_string(d.contexts.size()) +
                    " contexts' pools; the summary adds each pool's peak, the events give the "
                    "device's, so peaks are not compared");
  }
  if (d.contexts_dropped != 0) {
    notes.push_back(name + ": its pool was dropped with its context " +
                    std::to_string(d.contexts_dropped) + " time(s), the last at seq " +
                    std::to_string(d.last_drop_seq) + ", with " + std::to_string(d.dropped_blocks) +
                    " block(s) (" + text(d.dropped_bytes) +
                    " bytes) still allocated, which the driver took (not leaks). The events' "
                    "peaks cover the whole run; a summary line describes only the pool made after "
                    "the last drop");
  }
  const JsonValue* stats = entry ? entry->find("stats") : nullptr;
  if (stats != nullptr && stats->is_object()) {
    r.from_summary = true;
    for (const auto& [k, v] : stats->members) r.stats.emplace_back(k, *v.integer());
    const std::pair<const char*, Figure> checks[] = {
        {"allocated_bytes.all.peak", d.allocated_bytes.peak},
        {"reserved_bytes.all.peak", d.reserved_bytes.peak},
        {"allocated_bytes.all.current", d.allocated_bytes.current},
        {"reserved_bytes.all.current", d.reserved_bytes.current}};
    const char* const what[] = {"peak allocated", "peak reserved", "allocated at exit",
                                "reserved at exit"};
    for (int i = 0; i < 4; ++i) {
      const JsonValue* theirs = stats->find(checks[i].first);
      if (i < 2 && (d.contexts_dropped != 0 || d.contexts.size() > 1)) continue;
      if (theirs != nullptr && *theirs->integer() != checks[i].second) {
        notes.push_back(name + ": " + what[i] + " is " + theirs->integer_text() +
                        " in the summary, " + text(checks[i].second) + " from the events");
      }
    }
  } else {
    r.stats = implied_stats(d);
    if (d.no_free_completed()) {
      notes.push_back(name +
                      ": the log has no free_completed events: blocks are taken to stop "
                      "being active at free_requested");
    }
  }
  static const HeldDevice kNothingHeld;
  r.held = held_part(dv ? dv->held : kNothingHeld, a.options_.level,
                     d.peak_reserved ? std::optional<Figure>(d.peak_reserved->bytes) : std::nullopt,
                     d.peak_allocated.has_value(), held_span(a));
  if (d.peak_allocated) {
    const Peak& p = *d.peak_allocated;
    r.peak_allocated = PeakReport{p.bytes, p.seq, p.t_ns, a.seconds(p.t_ns)};
  }
  if (d.peak_reserved) {
    const Peak& p = *d.peak_reserved;
    r.peak_reserved = PeakReport{p.bytes, p.seq, p.t_ns, a.seconds(p.t_ns)};
    if (dv != nullptr && dv->layout.reserved_peak_reached()) {
      const bool on_request = d.no_free_completed();
      const Gap g = dv->layout.at_reserved_peak().largest_gap(on_request);
      const Figure fenced = on_request ? 0 : p.active - p.allocated;
      Fragmentation f{p.seq,
                      p.t_ns,
                      a.seconds(p.t_ns),
                      p.bytes,
                      p.allocated,
                      fenced,
                      p.bytes - p.allocated - fenced,
                      g.bytes,
                      std::nullopt,
                      std::nullopt,
                      std::nullopt,
                      g.regions,
                      on_request,
                      p.set_by_map,
                      p.set_ptr,
                      p.set_size,
                      std::nullopt,
                      0,
                      p.request};
      if (g.found) {
        f.largest_at = g.at;
        f.largest_segment = g.seg;
      }
      f.largest_before =
          dv->layout.at_reserved_peak()
              .largest_gap(on_request, std::make_pair(UFigure(p.set_ptr),
                                                      UFigure(p.set_ptr) + UFigure(p.set_size)))
              .bytes;
      if (f.free_cached >= static_cast<Figure>(p.set_size))
        f.free_before = f.free_cached - static_cast<Figure>(p.set_size);
      const bool ok = possible(f.reserved) && possible(f.allocated) && possible(f.fenced) &&
                      possible(f.free_cached);
      if (ok) {
        f.fragmentation = 0.0;
        if (f.free_cached > 0) {
          const double share =
              f.largest < (UFigure{1} << 53) && f.free_cached < (Figure{1} << 53)
                  ? static_cast<double>(f.largest) / static_cast<double>(f.free_cached)
                  : static_cast<double>(static_cast<long double>(f.largest) /
                                        static_cast<long double>(f.free_cached));
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.6f", 1 - share);
          f.fragmentation = std::strtod(buf, nullptr);
        }
        if (static_cast<Figure>(f.largest) > f.free_cached) {
          notes.push_back(name + ": at the reserved peak the largest free block (" +
                          figure_text(static_cast<Figure>(f.largest)) +
                          ") is larger than the free bytes, reserved - allocated - fenced (" +
                          text(f.free_cached) + "): the log is inconsistent");
        }
      }
      r.fragmentation = f;
    }
  }
  return r;
}

}  // namespace

std::optional<Figure> header_rank(const JsonValue* header) {
  if (header == nullptr) return std::nullopt;
  if (const JsonValue* rank = header->find("rank"); rank != nullptr && rank->is_integer()) {
    return rank->integer();
  }
  for (const char* field : {"environment", "env"}) {
    const JsonValue* env = header->find(field);
    if (env == nullptr || !env->is_object()) continue;
    for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
      const JsonValue* v = env->find(name);
      if (v == nullptr || !v->is_string() || v->text.empty()) continue;
      if (v->text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
      JsonValue n;
      n.type = JsonValue::Type::kNumber;
      n.text = v->text.substr(std::min(v->text.find_first_not_of('0'), v->text.size() - 1));
      return n.integer();
    }
  }
  return std::nullopt;
}

Report build_report(const LogAnalysis& a, const std::string& name) {
  Report rep;
  rep.log = name;
  std::vector<std::string>& notes = rep.notes;
  notes = a.notes_;
  if (!a.header_) notes.push_back("the log has no header line");
  if (a.summary_) {
    const JsonValue& s = *a.summary_;
    if (const JsonValue* ev = s.find("events");
        ev != nullptr && ev->is_integer() && *ev->integer() != static_cast<Figure>(a.events_)) {
      notes.push_back("the summary counts " + ev->integer_text() + " events; the log holds " +
                      std::to_string(a.events_) + " valid event lines");
    }
    if (const JsonValue* errors = s.find("log_errors"); errors != nullptr && errors->is_object()) {
      const JsonValue* failed = errors->find("write_failed");
      if (failed != nullptr && failed->type == JsonValue::Type::kBool && failed->boolean) {
        notes.push_back("the log writer reported a failed write: lines are missing");
      }
      const JsonValue* lost = errors->find("records_lost");
      if (lost != nullptr && lost->is_integer() && lost->integer_text() != "0") {
        notes.push_back("the log writer lost " + lost->integer_text() + " records");
      }
    }
    if (a.events_after_summary_ != 0) {
      notes.push_back(std::to_string(a.events_after_summary_) +
                      " events come after the summary line");
    }
  }
  if (a.gaps_.count != 0) {
    notes.push_back("seq is not consecutive " + std::to_string(a.gaps_.count) +
                    " time(s); first at line " + std::to_string(a.gaps_.line) + ": seq " +
                    std::to_string(a.gaps_.after) + " after " + std::to_string(a.gaps_.before));
  }
  if (!a.unknown_actions_.empty()) {
    std::string list;
    for (const auto& [n, count] : a.unknown_actions_) list += (list.empty() ? "" : ", ") + n;
    notes.push_back("actions this report does not know, counted only: " + list);
  }
  // The engine's bounded tables (docs/analysis-format.md, "Memory"): what fell past them.
  if (a.unknown_action_names_dropped_ != 0) {
    notes.push_back("more than " + std::to_string(kMaxUnknownActions) +
                    " unknown action names: " + std::to_string(a.unknown_action_names_dropped_) +
                    " event(s) of further names are in no row of the actions");
  }
  if (a.sizes_not_counted_ != 0) {
    notes.push_back("more than " + std::to_string(kMaxRequestSizes) +
                    " distinct request sizes: " + std::to_string(a.sizes_not_counted_) +
                    " allocation(s) of further sizes are left out of the request-size tables");
  }
  if (a.sites_.stacks_over_limit() != 0) {
    notes.push_back("more than " + std::to_string(kMaxSites) +
                    " distinct allocation stacks: " + std::to_string(a.sites_.stacks_over_limit()) +
                    " allocation(s) of further stacks belong to no site");
  }
  // Devices: those with events and those the summary names.
  const JsonValue* summary_devices = a.summary_ ? a.summary_->find("devices") : nullptr;
  std::set<int> ids;
  for (const auto& [dev, d] : a.devices_) ids.insert(dev);
  if (summary_devices != nullptr && summary_devices->is_object()) {
    for (const auto& [key, entry] : summary_devices->members) {
      const std::size_t nz = key.find_first_not_of('0');
      ids.insert(nz == std::string::npos ? 0 : std::stoi(key.substr(nz)));
    }
  }
  for (const int dev : ids) {
    const JsonValue* entry = summary_devices && summary_devices->is_object()
                                 ? summary_devices->find(std::to_string(dev))
                                 : nullptr;
    rep.devices.push_back(device_report(a, dev, entry, notes));
  }
  rep.held = held_log(a, rep.devices);
  for (const DeviceReport& d : rep.devices) {
    overflow_notes("device " + std::to_string(d.dev), d.held, notes);
  }
  overflow_notes("all devices", rep.held.all, notes);
  rep.leaks = leak_report(a, notes);
  // Figures no device can have.
  const auto check = [&](const std::string& where, const std::string& what, Figure v) {
    if (!possible(v)) rep.impossible.push_back(Impossible{where, what, v});
  };
  const auto check_means = [&](const std::string& where, const HeldPart& p) {
    if (p.allocated && p.allocated->mean) check(where, "mean allocated", *p.allocated->mean);
    if (p.reserved && p.reserved->mean) check(where, "mean reserved", *p.reserved->mean);
  };
  for (const DeviceReport& d : rep.devices) {
    const std::string where = "device " + std::to_string(d.dev);
    for (const auto& [stat, v] : d.stats) {
      if (stat != "max_split_size") check(where, stat, v);
    }
    if (d.peak_allocated) check(where, "peak allocated", d.peak_allocated->bytes);
    if (d.peak_reserved) check(where, "peak reserved", d.peak_reserved->bytes);
    if (d.fragmentation) {
      check(where, "reserved at the reserved peak", d.fragmentation->reserved);
      check(where, "allocated at the reserved peak", d.fragmentation->allocated);
      check(where, "fenced at the reserved peak", d.fragmentation->fenced);
      check(where, "free cached at the reserved peak", d.fragmentation->free_cached);
    }
    check_means(where, d.held);
  }
  check_means("all devices", rep.held.all);
  check("leaks", "bytes in blocks", rep.leaks.bytes);
  check("leaks", "requested bytes", rep.leaks.requested_bytes);
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const Impossible& x : rep.impossible) {
    if (groups.empty() || groups.back().first != x.where) {
      const auto it = std::find_if(groups.begin(), groups.end(),
                                   [&](const auto& g) { return g.first == x.where; });
      if (it == groups.end()) {
        groups.emplace_back(x.where, std::vector<std::string>{});
      }
    }
    std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.first == x.where;
    })->second.push_back(x.what + " = " + text(x.value));
  }
  for (const auto& [where, names] : groups) {
    std::string shown;
    for (std::size_t i = 0; i < names.size() && i < kImpossibleShown; ++i) {
      shown += (i ? ", " : "") + names[i];
    }
    if (names.size() > kImpossibleShown) shown += ", ...";
    notes.push_back(where + ": impossible figure" + (names.size() == 1 ? "" : "s") +
                    " (negative, or 2**64 or more: beyond any 64-bit device; the log is "
                    "inconsistent): " +
                    shown);
  }
  rep.header_rank = header_rank(a.header_ ? &*a.header_ : nullptr);
  return rep;
}

}  // namespace cudapool::analyze
