// SPDX-License-Identifier: Apache-2.0
// tools/tune/tune_report.cpp: see tune_report.h.
#include "tools/tune/tune_report.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "pool/bytes_text.h"
#include "tools/tune/idle_costs.h"

namespace cudapool::tune {

namespace {

using pool::bytes_text;

double overhead(const Outcome& o) {
  if (o.peak_allocated == 0) return 0.0;
  return (static_cast<double>(o.peak_reserved) - static_cast<double>(o.peak_allocated)) /
         static_cast<double>(o.peak_allocated);
}

}  // namespace

std::string full_device_note(const Outcome& o) {
  if (o.oversize_releases == 0) return {};
  const bool capped = o.memory_limit != 0 && o.memory_limit < o.device_memory;
  std::string where = "the simulated device's " + bytes_text(o.device_memory);
  if (capped) {
    where = "the " + bytes_text(o.memory_limit) + " that per_process_memory_fraction allows of " +
            where;
  }
  const std::uint64_t n = o.oversize_releases;
  return "reserved filled " + where + ": to make room the pool gave back " + std::to_string(n) +
         " cached oversize block" + (n == 1 ? "" : "s") +
         " (max_split_size keeps blocks at or above it whole, and they pile up), which PyTorch "
         "does not count as retries; a real run would " +
         (capped ? "hold all it is allowed" : "fill the GPU");
}

namespace {

void table(std::string& out, const TuneResult& r, const std::vector<RankedRow>& rows,
           std::size_t limit) {
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-52s %12s %8s %12s %9s %8s %8s %7s %5s\n", "rank",
                "setting (changes against the log's own)", "peak resv", "vs own", "peak alloc",
                "overhead", "dev.alloc", "dev.free", "retries", "OOMs");
  out += line;
  std::size_t n = 0;
  std::string notes;  // under the table, for the rows shown
  for (const RankedRow& row : rows) {
    if (n++ == limit) {
      out += "  ... " + std::to_string(rows.size() - limit) + " more (--rows N, or --json)\n";
      break;
    }
    const Candidate& c = r.candidates[row.candidate];
    const std::string note = full_device_note(row.outcome);
    if (!note.empty())
      notes += "  note, rank " + std::to_string(n) + " (" + c.label + "): " + note + ".\n";
    std::string label = c.label;
    if (label.size() > 52) label = label.substr(0, 49) + "...";
    std::snprintf(line, sizeof line,
                  "%4zu  %-52s %12s %+7.1f%% %12s %8.1f%% %9llu %8llu %7llu %5llu\n", n,
                  label.c_str(), bytes_text(row.outcome.peak_reserved).c_str(), 100.0 * row.vs_own,
                  bytes_text(row.outcome.peak_allocated).c_str(), 100.0 * overhead(row.outcome),
                  static_cast<unsigned long long>(row.outcome.device_allocs),
                  static_cast<unsigned long long>(row.outcome.device_frees),
                  static_cast<unsigned long long>(row.outcome.retries),
                  static_cast<unsigned long long>(row.outcome.ooms));
    out += line;
  }
  out += notes;
}

nlohmann::json outcome_json(const TuneResult& r, const RankedRow& row, std::size_t rank) {
  const Candidate& c = r.candidates[row.candidate];
  const std::string note = full_device_note(row.outcome);
  return {{"rank", rank},
          {"setting", c.label},
          {"changes", c.changes},
          {"conf", c.conf},
          {"tried_by_user", c.user},
          {"peak_reserved", row.outcome.peak_reserved},
          {"peak_allocated", row.outcome.peak_allocated},
          {"overhead", overhead(row.outcome)},
          {"vs_own", row.vs_own},
          {"device_allocs", row.outcome.device_allocs},
          {"device_frees", row.outcome.device_frees},
          {"retries", row.outcome.retries},
          {"ooms", row.outcome.ooms},
          {"oversize_releases", row.outcome.oversize_releases},
          {"mean_reserved", row.outcome.mean_reserved},
          {"span_ns", row.outcome.span_ns},
          {"mapped_bytes", row.outcome.mapped_bytes},
          {"idle_releases", row.outcome.idle_releases},
          {"note", note.empty() ? nlohmann::json(nullptr) : nlohmann::json(note)}};
}

std::string dash_or(bool dash, const std::string& text) {
  return dash ? "-" : text;
}

// The section "Held over time": one row per idle variant tried and the setting without idle
// release (idle.h), or why idle release was not tried.
void idle_table(std::string& out, const TuneResult& r) {
  const IdleStudy& study = r.idle;
  if (r.candidates.empty()) return;
  if (!study.tried()) {
    if (!study.not_tried.empty()) out += "Held over time: " + study.not_tried + ".\n\n";
    return;
  }
  const std::size_t logs = r.logs.size();
  out += "Held over time: idle release (cudapool's own keys) added to " +
         r.candidates[study.base].label + ", the setting recommended by peak" +
         (logs > 1 ? "; each figure the worst of the " + std::to_string(logs) + " logs" : "") +
         ":\n";
  char line[512];
  std::snprintf(line, sizeof line, "%3s %-50s %12s %9s %12s %12s %10s %7s %8s\n", "", "idle keys",
                "mean resv", "vs none", "peak resv", "mapped again", "est. cost", "of span",
                "releases");
  out += line;
  for (std::size_t k = 0; k < study.rows.size(); ++k) {
    const IdleFigures f = idle_figures(study, k);
    const std::string label = idle_keys(study.rows[k]);
    char vs[32], cost[32], share[32];
    std::snprintf(vs, sizeof vs, "%+.1f%%", 100.0 * f.vs_without);
    std::snprintf(cost, sizeof cost, "%.3f s", f.cost_s);
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * f.cost_share);
    std::snprintf(line, sizeof line, "%3s %-50s %12s %9s %12s %12s %10s %7s %8llu\n",
                  study.chosen == k ? "*" : "", label.c_str(),
                  bytes_text(static_cast<std::uint64_t>(f.mean_reserved)).c_str(),
                  dash_or(k == 0, vs).c_str(), bytes_text(f.peak_reserved).c_str(),
                  dash_or(k == 0, bytes_text(f.mapped_again)).c_str(),
                  dash_or(k == 0, cost).c_str(), dash_or(k == 0, share).c_str(),
                  static_cast<unsigned long long>(f.releases));
    out += line;
  }
  std::snprintf(line, sizeof line,
                "  mean resv: reserved memory averaged over the log's span; mapped again: bytes "
                "taken from the device beyond the first row's, costed at %.0f us a driver "
                "allocation (a handle of expandable segments, or a segment) and %.1f ms per GB "
                "(tools/tune/idle_costs.h: measured on an H200); *: recommended, the least held on "
                "average at a cost "
                "within %g%% of the span, %.0f%% or more below the first row, peak within "
                "%.0f%% of it\n",
                kRemapSecondsPerMapping * 1e6, kRemapSecondsPerByte * 1e12,
                100.0 * study.cost_budget, 100.0 * kIdleMinSaving, 100.0 * kIdlePeakTolerance);
  out += line;
  out += "\n";
}

nlohmann::json idle_json(const TuneResult& r) {
  const IdleStudy& study = r.idle;
  const auto label = [&](const std::optional<std::size_t>& row) {
    return row ? nlohmann::json(study.rows[*row].setting.label) : nlohmann::json(nullptr);
  };
  nlohmann::json j = {{"tried", study.tried()},
                      {"not_tried", study.not_tried.empty() ? nlohmann::json(nullptr)
                                                            : nlohmann::json(study.not_tried)},
                      {"setting", r.candidates[study.base].label},
                      {"remap_seconds_per_byte", kRemapSecondsPerByte},
                      {"remap_seconds_per_mapping", kRemapSecondsPerMapping},
                      {"peak_tolerance", kIdlePeakTolerance},
                      {"cost_budget", study.cost_budget},
                      {"min_saving", kIdleMinSaving},
                      {"rows", nlohmann::json::array()},
                      {"chosen", label(study.chosen)},
                      {"most_saving", label(study.most_saving)}};
  if (!study.tried()) return j;
  for (std::size_t k = 0; k < study.rows.size(); ++k) {
    const IdleRow& row = study.rows[k];
    const IdleFigures f = idle_figures(study, k);
    nlohmann::json per_log = nlohmann::json::array();
    for (const Outcome& o : row.outcomes) {
      per_log.push_back({{"mean_reserved", o.mean_reserved},
                         {"span_ns", o.span_ns},
                         {"peak_reserved", o.peak_reserved},
                         {"mapped_bytes", o.mapped_bytes},
                         {"device_allocs", o.device_allocs},
                         {"idle_releases", o.idle_releases},
                         {"idle_released_bytes", o.idle_released_bytes}});
    }
    j["rows"].push_back({{"setting", row.setting.label},
                         {"changes", row.setting.changes},
                         {"conf", row.setting.conf},
                         {"idle_release_ms", row.delay_ms},
                         {"idle_release_floor_mb", row.floor_mb},
                         {"expandable_handle_mb", row.handle_mb},
                         {"mean_reserved", f.mean_reserved},
                         {"vs_without", f.vs_without},
                         {"peak_reserved", f.peak_reserved},
                         {"mapped_again", f.mapped_again},
                         {"mappings_again", f.mappings_again},
                         {"cost_s", f.cost_s},
                         {"cost_share", f.cost_share},
                         {"span_ns", f.span_ns},
                         {"idle_releases", f.releases},
                         {"affordable", k != 0 && idle_affordable(f, study.cost_budget)},
                         {"logs", per_log}});
  }
  return j;
}

}  // namespace

std::string text_report(const TuneResult& r, const ReportContext& ctx) {
  std::string out;
  char line[512];
  for (std::size_t l = 0; l < r.logs.size(); ++l) {
    const replay::LogTally& log = r.logs[l];
    const std::uint64_t memory = r.outcomes[l].empty() ? 0 : r.outcomes[l][0].device_memory;
    std::snprintf(line, sizeof line,
                  "%s: %llu events (%llu allocations, largest %s), device memory %s%s\n",
                  ctx.paths[l].c_str(), static_cast<unsigned long long>(log.event_count),
                  static_cast<unsigned long long>(log.allocs),
                  bytes_text(log.largest_request).c_str(), bytes_text(memory).c_str(),
                  r.fraction ? (", fraction " + std::to_string(*r.fraction)).c_str() : "");
    out += line;
    if (log.malformed_lines != 0 || (!r.outcomes[l].empty() && r.outcomes[l][0].problems != 0)) {
      out += "  note: " + std::to_string(log.malformed_lines) + " malformed lines and " +
             std::to_string(r.outcomes[l].empty() ? 0 : r.outcomes[l][0].problems) +
             " events the replay could not apply (cudapool replay LOG lists them)\n";
    }
    table(out, r, r.ranked[l], ctx.rows);
    out += "\n";
  }
  if (!r.worst.empty()) {
    out += "Over all " + std::to_string(r.logs.size()) +
           " logs (each setting's largest peak reserved, its largest counts, OOMs summed):\n";
    table(out, r, r.worst, ctx.rows);
    out += "\n";
  }
  idle_table(out, r);
  const Recommendation& rec = r.recommendation;
  if (r.candidates.empty()) return out;
  if (rec.keep_own) {
    out += "Recommendation: keep the log's own settings";
    out += rec.conf.empty() ? " (the defaults)" : (" (" + rec.conf + ")");
    out += ": " + rec.why + ".\n";
  } else {
    out += "Recommendation:\n";
    out += "  CUDAPOOL_CONF='" + rec.conf + "'\n";
    if (rec.pytorch_conf.empty()) {
      out +=
          "  (PyTorch's own allocator: no PYTORCH_CUDA_ALLOC_CONF; its keys are cudapool's "
          "own)\n";
    } else if (rec.pytorch_conf != rec.conf) {
      out += "  PYTORCH_CUDA_ALLOC_CONF='" + rec.pytorch_conf +
             "'  (PyTorch's own allocator: its keys only)\n";
    } else {
      out += "  (the same string works as PYTORCH_CUDA_ALLOC_CONF for PyTorch's own allocator)\n";
    }
    out += "  why: " + rec.why + ".\n";
    for (const std::string& c : rec.caveats) out += "  caveat: " + c + ".\n";
  }
  std::snprintf(line, sizeof line, "(%zu settings", r.candidates.size());
  out += line;
  if (r.idle.tried()) {
    std::snprintf(line, sizeof line, " and %zu idle variants", r.idle.rows.size() - 1);
    out += line;
  }
  std::snprintf(line, sizeof line, " x %zu logs replayed in %.2f s on %d threads", r.logs.size(),
                ctx.seconds, ctx.threads);
  out += line;
  if (r.replayed < r.settings) {
    // Settings that round every request alike shared a replay (same_replay.h).
    std::snprintf(line, sizeof line,
                  "; %zu pools: settings that round every request of the log%s to the same "
                  "blocks shared one",
                  r.replayed, r.logs.size() == 1 ? "" : "s");
    out += line;
  }
  out += ")\n";
  return out;
}

std::string json_report(const TuneResult& r, const ReportContext& ctx) {
  nlohmann::json j;
  j["schema"] = "cudapool.tune/1";
  j["seconds"] = ctx.seconds;
  j["threads"] = ctx.threads;
  j["settings_tried"] = r.settings;
  j["pools_replayed"] = r.replayed;
  if (r.fraction) j["fraction"] = *r.fraction;
  j["logs"] = nlohmann::json::array();
  for (std::size_t l = 0; l < r.logs.size(); ++l) {
    const replay::LogTally& log = r.logs[l];
    nlohmann::json entry = {
        {"path", ctx.paths[l]},
        {"events", log.event_count},
        {"allocations", log.allocs},
        {"largest_request", log.largest_request},
        {"malformed_lines", log.malformed_lines},
        {"device_memory", r.outcomes[l].empty() ? 0 : r.outcomes[l][0].device_memory},
        {"results", nlohmann::json::array()}};
    std::size_t n = 0;
    for (const RankedRow& row : r.ranked[l]) entry["results"].push_back(outcome_json(r, row, ++n));
    j["logs"].push_back(entry);
  }
  if (!r.worst.empty()) {
    j["worst"] = nlohmann::json::array();
    std::size_t n = 0;
    for (const RankedRow& row : r.worst) j["worst"].push_back(outcome_json(r, row, ++n));
  }
  if (!r.candidates.empty()) {
    const Recommendation& rec = r.recommendation;
    j["held_over_time"] = idle_json(r);
    j["recommendation"] = {{"keep_own", rec.keep_own},
                           {"setting", rec.setting},
                           {"idle", rec.idle},
                           {"mean_reserved", rec.mean_reserved},
                           {"own_mean_reserved", rec.own_mean_reserved},
                           {"cudapool_conf", rec.conf},
                           {"pytorch_conf", rec.pytorch_conf},
                           {"why", rec.why},
                           {"caveats", rec.caveats}};
  }
  return j.dump(2) + "\n";
}

}  // namespace cudapool::tune
