// SPDX-License-Identifier: Apache-2.0
// tools/replay/report.cpp: see report.h. The JSON layout is documented in docs/replay.md. Text
// from the log (the conf, problems naming a log's action) reaches the terminal escaped as the conf
// diagnostics are (config/terminal_text.h).
#include "tools/replay/report.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "config/terminal_text.h"
#include "pool/bytes_text.h"
#include "pool/summary.h"

namespace cudapool::replay {

namespace {

// The longest conf printed whole (bytes); a longer one is cut on a character and ends in "...".
constexpr std::size_t kMaxConfShown = 1000;

// The conf line: the string in quotes, cut and escaped for the terminal.
std::string conf_text(const std::string& conf) {
  if (conf.size() <= kMaxConfShown) return config::escape_for_terminal(conf, '"');
  std::string cut(conf, 0, config::character_boundary(conf, kMaxConfShown - 3));
  cut += "...";
  return config::escape_for_terminal(cut, '"');
}

nlohmann::ordered_json stats_json(const pool::DeviceStats& stats) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  pool::for_each_stat(
      stats, [&](std::string_view name, std::int64_t value) { out[std::string(name)] = value; });
  return out;
}

nlohmann::ordered_json counts_json(const ReplayCounts& c) {
  return nlohmann::ordered_json{{"lines", c.lines},
                                {"events_replayed", c.events_replayed},
                                {"allocs", c.allocs},
                                {"frees", c.frees},
                                {"oom_events", c.oom_events},
                                {"empty_cache_events", c.empty_cache_events},
                                {"free_completed_events", c.free_completed_events},
                                {"fenced_frees", c.fenced_frees},
                                {"contexts_dropped", c.contexts_dropped},
                                {"other_lines", c.other_lines},
                                {"blank_lines", c.blank_lines},
                                {"malformed_lines", c.malformed_lines},
                                {"failed_allocs", c.failed_allocs},
                                {"frees_of_failed_allocs", c.frees_of_failed_allocs},
                                {"unknown_frees", c.unknown_frees},
                                {"duplicate_allocs", c.duplicate_allocs},
                                {"zero_size_allocs", c.zero_size_allocs},
                                {"oom_not_reproduced", c.oom_not_reproduced},
                                {"segment_alloc_events", c.segment_alloc_events},
                                {"segments_at_log_address", c.segments_at_log_address},
                                {"log_addresses_dropped", c.log_addresses_dropped},
                                {"events_of_unlisted_devices", c.events_of_unlisted_devices},
                                {"events_over_pool_limit", c.events_over_pool_limit},
                                {"reserved_pointer_allocs", c.reserved_pointer_allocs},
                                {"address_space_refusals", c.address_space_refusals},
                                {"idle_release_events", c.idle_release_events},
                                {"idle_ticks_simulated", c.idle_ticks_simulated},
                                {"idle_releases", c.idle_releases},
                                {"idle_released_bytes", c.idle_released_bytes}};
}

}  // namespace

std::string json_report(const Replayer& r, double seconds) {
  nlohmann::ordered_json out;
  out["schema"] = "cudapool.replay/1";
  out["conf"] = r.conf();
  out["conf_origin"] = r.conf_origin();
  out["conf_diagnostics"] = r.conf_diagnostics();
  const ReplayCounts& c = r.counts();
  out["counts"] = counts_json(c);
  // The three counters tools check most, also at the top level.
  out["failed_allocs"] = c.failed_allocs;
  out["unknown_frees"] = c.unknown_frees;
  out["malformed_lines"] = c.malformed_lines;
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  for (const Problem& p : r.problems()) problems.push_back({{"line", p.line}, {"what", p.what}});
  out["problems"] = problems;
  out["seconds"] = seconds;
  out["events_per_second"] = seconds > 0 ? static_cast<double>(c.events_replayed) / seconds : 0.0;
  nlohmann::ordered_json devices = nlohmann::ordered_json::object();
  for (int id : r.devices()) {
    devices[std::to_string(id)] = {{"device_memory", r.device_memory(id)},
                                   {"stats", stats_json(r.stats(id))}};
  }
  out["devices"] = devices;
  // Memory held over time: reserved bytes of all pools, time-weighted over the events' span.
  const HeldOverTime& h = r.held();
  out["held"] = {{"span_ns", h.span_ns()},
                 {"mean_reserved_bytes", h.mean_reserved(r.reserved_now())},
                 {"idle_ticks", r.idle_ticks_from_log() ? "log" : "simulated"}};
  // The first device's statistics, flat, for single-device logs.
  out["stats"] = stats_json(r.stats(r.devices().front()));
  return out.dump(2) + "\n";
}

std::string text_report(const Replayer& r, double seconds) {
  std::ostringstream out;
  for (int id : r.devices()) {
    out << pool::memory_summary(r.stats(id), id);
    out << "device " << id << " memory (simulated): " << r.device_memory(id) << " bytes\n\n";
  }
  const ReplayCounts& c = r.counts();
  out << "conf: \"" << conf_text(r.conf()) << "\" (" << r.conf_origin() << ")\n";
  for (const std::string& d : r.conf_diagnostics()) out << d << "\n";
  out << "replayed " << c.events_replayed << " events from " << c.lines << " lines in " << seconds
      << " s";
  if (seconds > 0) {
    out << " (" << static_cast<std::uint64_t>(static_cast<double>(c.events_replayed) / seconds)
        << " events/s)";
  }
  out << "\n";
  out << "  allocs " << c.allocs << ", frees " << c.frees << ", oom events " << c.oom_events
      << ", empty_cache " << c.empty_cache_events << ", other lines " << c.other_lines << "\n";
  auto report = [&](const char* what, std::uint64_t n) {
    if (n != 0) out << "  " << what << ": " << n << "\n";
  };
  {
    const HeldOverTime& h = r.held();
    out << "  reserved over the log's " << static_cast<double>(h.span_ns()) / 1e9 << " s: mean "
        << pool::bytes_text(static_cast<std::uint64_t>(h.mean_reserved(r.reserved_now()))) << "\n";
  }
  if (c.idle_release_events != 0 || c.idle_ticks_simulated != 0) {
    out << "  idle release: " << c.idle_release_events << " ticks in the log, "
        << (r.idle_ticks_from_log() ? "replayed as logged" : "not replayed") << "; "
        << c.idle_ticks_simulated << " ticks simulated from the events' times; " << c.idle_releases
        << " gave memory back (" << pool::bytes_text(c.idle_released_bytes) << ")\n";
  }
  report("allocations that ran out of memory", c.failed_allocs);
  report("frees of those (skipped)", c.frees_of_failed_allocs);
  report("frees of unknown pointers", c.unknown_frees);
  report("allocs of a live pointer (skipped)", c.duplicate_allocs);
  report("zero-size allocs (skipped)", c.zero_size_allocs);
  report("oom events the replay could serve", c.oom_not_reproduced);
  report("malformed lines", c.malformed_lines);
  report("frees held behind a reuse fence in the logged run", c.fenced_frees);
  report("contexts dropped (that device's pool started afresh)", c.contexts_dropped);
  report("events of devices the header does not list (skipped)", c.events_of_unlisted_devices);
  report("events of pools beyond 256 alive at once (skipped)", c.events_over_pool_limit);
  report("allocs of the reserved pointer 0xffffffffffffffff (skipped)", c.reserved_pointer_allocs);
  report("requests refused: a pool's simulated address range was full", c.address_space_refusals);
  if (c.segment_alloc_events != 0) {
    out << "  segments placed at the log's addresses: " << c.segments_at_log_address << " of "
        << c.segment_alloc_events
        << (c.log_addresses_dropped ? " (then the replay's segments stopped matching the log's)"
                                    : "")
        << "\n";
  }
  if (!r.problems().empty()) {
    out << "problems (first " << r.problems().size() << "):\n";
    for (const Problem& p : r.problems()) {
      out << "  line " << p.line << ": " << config::escape_for_terminal(p.what) << "\n";
    }
  }
  return out.str();
}

}  // namespace cudapool::replay
