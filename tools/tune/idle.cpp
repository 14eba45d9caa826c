// SPDX-License-Identifier: Apache-2.0
// tools/tune/idle.cpp: see idle.h, and tune.h study_idle: which idle variants a tune tries, when,
// and the replays it asks for them.
#include "tools/tune/idle.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "config/parse.h"
#include "pool/rounding.h"
#include "tools/tune/idle_costs.h"
#include "tools/tune/tune.h"

namespace cudapool::tune {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

Candidate with_pairs(const Candidate& base, const std::string& pairs) {
  Candidate c;
  c.label = base.label == "own" ? pairs : base.label + "," + pairs;
  c.changes = base.changes.empty() ? pairs : base.changes + "," + pairs;
  c.conf = base.conf.empty() ? pairs : base.conf + "," + pairs;
  return c;
}

std::string milliseconds_text(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

// The keys an idle variant adds, in the order its label shows them.
std::string idle_pairs(std::uint64_t delay_ms, std::uint64_t floor_mb, std::uint64_t handle_mb) {
  std::string pairs;
  if (handle_mb != 0) pairs = "expandable_handle_mb:" + std::to_string(handle_mb) + ",";
  pairs += "idle_release_ms:" + std::to_string(delay_ms);
  if (floor_mb != 0) pairs += ",idle_release_floor_mb:" + std::to_string(floor_mb);
  return pairs;
}

}  // namespace

Candidate without_idle(const Candidate& base, bool* same) {
  *same = config::parse_conf(base.conf).options.idle_release_ms == 0;
  return *same ? base : with_pairs(base, "idle_release_ms:0");
}

Candidate idle_variant(const Candidate& base, std::uint64_t delay_ms, std::uint64_t floor_mb,
                       std::uint64_t handle_mb) {
  return with_pairs(base, idle_pairs(delay_ms, floor_mb, handle_mb));
}

std::size_t handle_bytes(const config::Options& options) {
  return pool::large_handle_pages(options) * options.large_segment_size;
}

std::vector<std::uint64_t> idle_handles_mb(const Candidate& base) {
  const config::Options options = config::parse_conf(base.conf).options;
  std::vector<std::uint64_t> out;
  if (!options.expandable_segments) return out;
  for (const std::uint64_t mb : kIdleHandlesMb) {
    config::Options larger = options;
    larger.expandable_handle = mb * kMiB;
    if (handle_bytes(larger) > handle_bytes(options)) out.push_back(mb);
  }
  return out;
}

std::string idle_keys(const IdleRow& row) {
  if (row.delay_ms == 0) {
    const std::string off = "idle_release_ms:0";
    const std::string& changes = row.setting.changes;
    const bool explicit_off = changes.size() >= off.size() &&
                              changes.compare(changes.size() - off.size(), off.size(), off) == 0;
    return explicit_off ? off : "none";
  }
  return idle_pairs(row.delay_ms, row.floor_mb, row.handle_mb);
}

std::vector<std::uint64_t> idle_delays(std::optional<std::uint64_t> span_ns) {
  std::vector<std::uint64_t> out;
  for (const std::uint64_t ms : kIdleDelaysMs) {
    // A block goes back after it was unused for idle_release_ms at least: not within a shorter
    // span.
    if (!span_ns || ms * kNsPerMs <= *span_ns) out.push_back(ms);
  }
  return out;
}

std::vector<std::uint64_t> idle_floors_mb(std::uint64_t peak_requested) {
  std::vector<std::uint64_t> out;
  for (const std::uint64_t part : {4ull, 2ull}) {
    const std::uint64_t mb = (peak_requested / part + kMiB / 2) / kMiB;
    if (mb != 0 && std::find(out.begin(), out.end(), mb) == out.end()) out.push_back(mb);
  }
  return out;
}

std::vector<IdleRow> idle_rows(const Candidate& base, std::optional<std::uint64_t> span_ns,
                               const std::vector<std::uint64_t>& floors_mb) {
  bool same = false;
  std::vector<IdleRow> rows{IdleRow{without_idle(base, &same), 0, 0, 0, {}}};
  const std::vector<std::uint64_t> delays = idle_delays(span_ns);
  for (const std::uint64_t ms : delays)
    rows.push_back(IdleRow{idle_variant(base, ms, 0), ms, 0, 0, {}});
  // The floors with the shortest delay: it gives back most, and maps most again, which a floor
  // is there to temper.
  for (const std::uint64_t mb : floors_mb) {
    if (!delays.empty())
      rows.push_back(IdleRow{idle_variant(base, delays[0], mb), delays[0], mb, 0, {}});
  }
  for (const std::uint64_t handle : idle_handles_mb(base)) {
    for (const std::uint64_t ms : delays)
      rows.push_back(IdleRow{idle_variant(base, ms, 0, handle), ms, 0, handle, {}});
  }
  return rows;
}

std::vector<std::string> read_once_idle_confs(const std::vector<Candidate>& sweep,
                                              const std::vector<std::uint64_t>& floors_mb) {
  std::vector<std::string> out;
  for (const Candidate& base : sweep) {
    if (&base != &sweep.front() && base.changes != "expandable_segments:True") continue;
    for (const IdleRow& row : idle_rows(base, std::nullopt, floors_mb))
      out.push_back(row.setting.conf);
  }
  return out;
}

IdleFigures idle_figures(const IdleStudy& study, std::size_t row) {
  IdleFigures f;
  const IdleRow& r = study.rows[row];
  const IdleRow& w = study.rows[0];
  // Mapping costs per driver allocation: under expandable segments per handle (the large pool's:
  // expandable_handle_mb's whole pages, or one page; the small pool's 2 MiB pages hold little),
  // per segment otherwise.
  const config::Options options = config::parse_conf(r.setting.conf).options;
  const double page = static_cast<double>(handle_bytes(options));
  double deciding = -1.0;
  for (std::size_t l = 0; l < r.outcomes.size(); ++l) {
    const Outcome& o = r.outcomes[l];
    const Outcome& without = w.outcomes[l];
    f.mean_reserved = std::max(f.mean_reserved, o.mean_reserved);
    f.without = std::max(f.without, without.mean_reserved);
    f.peak_reserved = std::max(f.peak_reserved, o.peak_reserved);
    f.peak_without = std::max(f.peak_without, without.peak_reserved);
    f.releases = std::max(f.releases, o.idle_releases);
    f.released_bytes = std::max(f.released_bytes, o.idle_released_bytes);
    const double bytes =
        static_cast<double>(o.mapped_bytes) - static_cast<double>(without.mapped_bytes);
    const double calls =
        static_cast<double>(o.device_allocs) - static_cast<double>(without.device_allocs);
    const double mappings = options.expandable_segments ? std::ceil(bytes / page) : calls;
    const double cost = remap_seconds(bytes, mappings);
    const double share = o.span_ns != 0 ? cost / (static_cast<double>(o.span_ns) / 1e9)
                         : cost > 0.0   ? std::numeric_limits<double>::infinity()
                                        : 0.0;
    if (share > deciding) {
      deciding = share;
      f.cost_s = cost;
      f.cost_share = share;
      f.span_ns = o.span_ns;
      f.mappings_again = mappings > 0.0 ? mappings : 0.0;
      f.mapped_again = bytes > 0.0 ? o.mapped_bytes - without.mapped_bytes : 0;
    }
  }
  if (f.without > 0.0) f.vs_without = (f.mean_reserved - f.without) / f.without;
  return f;
}

bool idle_affordable(const IdleFigures& f, double cost_budget) {
  return f.cost_share <= cost_budget && f.vs_without <= -kIdleMinSaving &&
         static_cast<double>(f.peak_reserved) <=
             static_cast<double>(f.peak_without) * (1.0 + kIdlePeakTolerance);
}

void choose_idle(IdleStudy* study) {
  study->chosen.reset();
  study->most_saving.reset();
  IdleFigures chosen, most;
  // Ties: the cheaper, then the earlier row (a shorter delay, no floor).
  const auto better = [](const IdleFigures& a, const IdleFigures& b) {
    return a.mean_reserved != b.mean_reserved ? a.mean_reserved < b.mean_reserved
                                              : a.cost_s < b.cost_s;
  };
  for (std::size_t row = 1; row < study->rows.size(); ++row) {
    const IdleFigures f = idle_figures(*study, row);
    if (!study->most_saving || better(f, most)) {
      study->most_saving = row;
      most = f;
    }
    if (idle_affordable(f, study->cost_budget) && (!study->chosen || better(f, chosen))) {
      study->chosen = row;
      chosen = f;
    }
  }
}

bool study_idle(TuneResult* result, bool read_once, const std::vector<std::uint64_t>& floors_mb,
                const ReplayMore& replay_more, const OutcomesOf& outcomes_of, double cost_budget) {
  IdleStudy& study = result->idle;
  study = IdleStudy{};
  study.cost_budget = cost_budget;
  if (result->candidates.empty() || result->outcomes.empty()) return true;
  study.base = result->recommendation.candidate;
  const Candidate& base = result->candidates[study.base];
  std::uint64_t span = 0;
  for (const auto& per_log : result->outcomes) span = std::max(span, per_log[study.base].span_ns);
  const std::string logs = result->outcomes.size() == 1 ? "the log" : "every log";
  if (span == 0) {
    study.not_tried = "idle release not tried: no time passes between the events of " + logs +
                      " (every t_ns the same: no timestamps)";
  } else if (span < kIdleDelaysMs[0] * kNsPerMs) {
    study.not_tried = "idle release not tried: the events of " + logs + " span " +
                      milliseconds_text(span) + ", less than the shortest idle_release_ms tried (" +
                      std::to_string(kIdleDelaysMs[0]) + " ms)";
  }
  if (!study.not_tried.empty()) {
    recommend_idle(result);
    return true;
  }
  // Replays the rows no pass replayed yet (logs read once: the first did what it could).
  std::vector<IdleRow> rows = idle_rows(base, span, floors_mb);
  std::vector<std::string> missing;
  for (const IdleRow& row : rows) {
    if (outcomes_of(row.setting.conf) == nullptr) missing.push_back(row.setting.conf);
  }
  if (!missing.empty() && !read_once && !replay_more(missing)) return false;
  for (IdleRow& row : rows) {
    const std::vector<Outcome>* o = outcomes_of(row.setting.conf);
    if (o == nullptr) {  // a log read once: only own's and expandable segments' variants ran
      study.not_tried = "idle release not tried on " + base.label +
                        ": the logs were read once (stdin, a FIFO), so only the variants of the "
                        "own setting and of expandable_segments:True were replayed beside the "
                        "sweep; give tune the log as a file";
      recommend_idle(result);
      return true;
    }
    row.outcomes = *o;
  }
  study.rows = std::move(rows);
  choose_idle(&study);
  recommend_idle(result);
  return true;
}

}  // namespace cudapool::tune
