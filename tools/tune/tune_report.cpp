// SPDX-License-Identifier: Apache-2.0
// tools/tune/tune_report.cpp: see tune_report.h.
#include "tools/tune/tune_report.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "pool/bytes_text.h"

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
          {"note", note.empty() ? nlohmann::json(nullptr) : nlohmann::json(note)}};
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
  const Recommendation& rec = r.recommendation;
  if (r.candidates.empty()) return out;
  if (rec.keep_own) {
    out += "Recommendation: keep the log's own settings";
    out += rec.conf.empty() ? " (the defaults)" : (" (" + rec.conf + ")");
    out += ": " + rec.why + ".\n";
  } else {
    out += "Recommendation:\n";
    out += "  CUDAPOOL_CONF='" + rec.conf + "'\n";
    if (rec.pytorch_conf != rec.conf) {
      out += "  PYTORCH_CUDA_ALLOC_CONF='" + rec.pytorch_conf +
             "'  (PyTorch's own allocator: its keys only)\n";
    } else {
      out += "  (the same string works as PYTORCH_CUDA_ALLOC_CONF for PyTorch's own allocator)\n";
    }
    out += "  why: " + rec.why + ".\n";
    for (const std::string& c : rec.caveats) out += "  caveat: " + c + ".\n";
  }
  std::snprintf(line, sizeof line, "(%zu settings x %zu logs replayed in %.2f s on %d threads",
                r.candidates.size(), r.logs.size(), ctx.seconds, ctx.threads);
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
    j["recommendation"] = {{"keep_own", rec.keep_own},
                           {"setting", r.candidates[rec.candidate].label},
                           {"cudapool_conf", rec.conf},
                           {"pytorch_conf", rec.pytorch_conf},
                           {"why", rec.why},
                           {"caveats", rec.caveats}};
  }
  return j.dump(2) + "\n";
}

}  // namespace cudapool::tune
