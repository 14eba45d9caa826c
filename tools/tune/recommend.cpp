// SPDX-License-Identifier: Apache-2.0
// tools/tune/recommend.cpp: see tune.h. The ranking of the outcomes and the recommendation with
// its caveats; the passes that make the outcomes: tune.cpp.
#include <algorithm>
#include <cstdio>
#include <set>

#include "config/describe.h"
#include "config/keys.h"
#include "config/parse.h"
#include "pool/bytes_text.h"
#include "tools/tune/idle_costs.h"
#include "tools/tune/tune.h"

namespace cudapool::tune {

namespace {

double relative(std::uint64_t value, std::uint64_t base) {
  if (base == 0) return 0.0;
  return (static_cast<double>(value) - static_cast<double>(base)) / static_cast<double>(base);
}

// The keys a conf string sets (table names).
std::set<std::string> keys_of(const std::string& conf) {
  const config::ParseResult parsed = config::parse_conf(conf);
  return std::set<std::string>(parsed.set_keys.begin(), parsed.set_keys.end());
}

std::vector<std::string> caveats_for(const Candidate& c, const Outcome& best, const Outcome& own) {
  std::vector<std::string> out;
  const std::set<std::string> keys = keys_of(c.changes);
  if (keys.count("expandable_segments")) {
    out.push_back(
        "expandable segments map memory page by page (cuMemCreate/cuMemMap): under the shim, "
        "cuIpcGetMemHandle is refused for their blocks, so a program that shares tensors between "
        "processes through CUDA IPC must keep them off");
  }
  if (keys.count("garbage_collection_threshold")) {
    out.push_back(
        "garbage_collection_threshold acts only with per_process_memory_fraction below 1 (it "
        "frees cached segments when reserved memory passes threshold x cap); it was tried under "
        "the fraction shown");
  }
  if (keys.count("max_split_size_mb")) {
    out.push_back(
        "max_split_size_mb keeps blocks at or above the limit whole: the saving depends on the "
        "request sizes staying as in this log");
  }
  if (keys.count("roundup_power2_divisions")) {
    out.push_back(
        "roundup_power2_divisions rounds requests up: each block may hold up to a division's "
        "worth of unused bytes");
  }
  if (keys.count("idle_release_ms")) {
    out.push_back(
        "idle_release_ms is cudapool's own key (CUDAPOOL_CONF only: PyTorch's allocator rejects "
        "it); its speed cost is an estimate of mapping memory again, measured on one GPU "
        "(tools/tune/idle_costs.h; docs/benchmarks.md, \"Idle release\")");
  }
  if (best.device_allocs > 2 * own.device_allocs + 100) {
    out.push_back("it calls cudaMalloc " + std::to_string(best.device_allocs) + " times against " +
                  std::to_string(own.device_allocs) +
                  " with the log's own settings: each call costs 60 us to 2.4 ms");
  }
  out.push_back(
      "a prediction from a replay of this log: check it with one real run (same program, "
      "CUDAPOOL_LOG, then cudapool report)");
  return out;
}

std::string percent_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * fraction);
  return buf;
}

// An idle cost budget (a fraction of the span) as --idle-cost writes it: "2%", "6.5%".
std::string budget_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", 100.0 * fraction);
  return buf;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g s", s);
  return buf;
}

std::string mean_text(double bytes) {
  return pool::bytes_text(static_cast<std::uint64_t>(bytes));
}

// "4.2 s, 1.3% of the log's 6.4 s" (several logs: of the one where it costs most).
std::string cost_text(const IdleFigures& f, std::size_t logs) {
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * f.cost_share);
  return "about " + seconds_text(f.cost_s) + ", " + share + " of " +
         (logs > 1 ? "the span of the log where it costs most, " : "the log's ") +
         seconds_text(static_cast<double>(f.span_ns) / 1e9);
}

}  // namespace

std::vector<RankedRow> rank(const std::vector<Outcome>& outcomes) {
  std::vector<RankedRow> rows;
  if (outcomes.empty()) return rows;
  const Outcome& own = outcomes[0];
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    rows.push_back(
        RankedRow{i, outcomes[i], relative(outcomes[i].peak_reserved, own.peak_reserved)});
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const RankedRow& a, const RankedRow& b) {
    const bool a_worse = a.outcome.ooms > own.ooms;
    const bool b_worse = b.outcome.ooms > own.ooms;
    if (a_worse != b_worse) return !a_worse;
    if (a.outcome.ooms != b.outcome.ooms) return a.outcome.ooms < b.outcome.ooms;
    if (a.outcome.peak_reserved != b.outcome.peak_reserved) {
      return a.outcome.peak_reserved < b.outcome.peak_reserved;
    }
    if (a.outcome.device_allocs != b.outcome.device_allocs) {
      return a.outcome.device_allocs < b.outcome.device_allocs;
    }
    return a.candidate < b.candidate;
  });
  return rows;
}

std::string paste_conf(const Candidate& c, bool pytorch_keys_only) {
  const config::ParseResult parsed = config::parse_conf(c.conf);
  std::string out;
  for (const config::EffectiveSetting& s : config::describe(parsed)) {
    if (s.origin == "default" || s.value == "ignored") continue;
    const config::KeyInfo* key = config::find_key(s.name);
    if (pytorch_keys_only && key != nullptr && key->cudapool_only) continue;
    // Set to its default, which describe() words as no value ("off", "unlimited"): not a value the
    // string takes, and leaving the key out means the same (idle_release_ms:0 reads "off").
    if (key != nullptr && s.value == key->default_text &&
        (s.value == "off" || s.value == "unlimited"))
      continue;
    if (!out.empty()) out += ",";
    out += s.name + ":" + s.value;
  }
  return out;
}

void rank_and_recommend(TuneResult* out) {
  TuneResult& result = *out;
  const std::vector<Candidate>& candidates = result.candidates;
  const std::size_t logs = result.outcomes.size();
  for (const auto& per_log : result.outcomes) result.ranked.push_back(rank(per_log));
  std::vector<Outcome> worst(candidates.size());
  if (logs > 1) {
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      for (const auto& per_log : result.outcomes) {
        Outcome& w = worst[c];
        const Outcome& o = per_log[c];
        if (o.peak_reserved > w.peak_reserved) {
          w.peak_reserved = o.peak_reserved;
          w.peak_allocated = o.peak_allocated;
        }
        w.device_allocs = std::max(w.device_allocs, o.device_allocs);
        w.device_frees = std::max(w.device_frees, o.device_frees);
        w.retries = std::max(w.retries, o.retries);
        w.ooms += o.ooms;
        w.problems = std::max(w.problems, o.problems);
        w.device_memory = std::max(w.device_memory, o.device_memory);
        w.memory_limit = std::max(w.memory_limit, o.memory_limit);
        w.oversize_releases = std::max(w.oversize_releases, o.oversize_releases);
      }
    }
    result.worst = rank(worst);
  }

  // The recommendation: the first of the deciding ranking, unless it is not clearly better.
  if (candidates.empty() || logs == 0) return;
  const std::vector<RankedRow>& deciding = logs > 1 ? result.worst : result.ranked[0];
  const RankedRow& best = deciding.front();
  const Outcome& own = logs > 1 ? worst[0] : result.outcomes[0][0];
  Recommendation& rec = result.recommendation;
  const bool fewer_ooms = best.outcome.ooms < own.ooms;
  const bool smaller = best.outcome.peak_reserved + own.peak_reserved / 100 < own.peak_reserved;
  rec.keep_own = best.candidate == 0 || (!fewer_ooms && !smaller);
  rec.candidate = rec.keep_own ? 0 : best.candidate;
  const Candidate& chosen = candidates[rec.candidate];
  rec.setting = chosen.label;
  rec.conf = paste_conf(chosen, false);
  rec.pytorch_conf = paste_conf(chosen, true);
  const std::string scope =
      logs > 1 ? " for the worst of the " + std::to_string(logs) + " logs" : "";
  if (rec.keep_own) {
    rec.why = "none of the " + std::to_string(candidates.size()) +
              " settings tried reserves 1% less than the log's own" + scope + " (peak reserved " +
              pool::bytes_text(own.peak_reserved) + ")";
    if (own.ooms > 0)
      rec.why += "; the own setting ran out of memory " + std::to_string(own.ooms) +
                 " times and none does better";
  } else {
    rec.why = "peak reserved " + pool::bytes_text(best.outcome.peak_reserved) + " instead of " +
              pool::bytes_text(own.peak_reserved) + scope;
    char pct[32];
    std::snprintf(pct, sizeof pct, " (%+.1f%%)", 100.0 * best.vs_own);
    rec.why += pct;
    rec.why += ", " + std::to_string(best.outcome.device_allocs) +
               " device allocations instead of " + std::to_string(own.device_allocs);
    if (fewer_ooms) {
      rec.why += ", " + std::to_string(best.outcome.ooms) + " out-of-memory errors instead of " +
                 std::to_string(own.ooms);
    }
    rec.caveats = caveats_for(chosen, best.outcome, own);
  }
}

void recommend_idle(TuneResult* out) {
  TuneResult& r = *out;
  if (r.candidates.empty() || r.outcomes.empty()) return;
  const IdleStudy& study = r.idle;
  Recommendation& rec = r.recommendation;
  const std::size_t logs = r.outcomes.size();
  // Over several logs: the largest mean (the worst log's), as the peak.
  const auto worst_mean = [&](std::size_t candidate) {
    double mean = 0.0;
    for (const auto& per_log : r.outcomes) mean = std::max(mean, per_log[candidate].mean_reserved);
    return mean;
  };
  const double own = worst_mean(0);
  double after = worst_mean(rec.candidate);
  if (study.chosen) {
    const IdleRow& row = study.rows[*study.chosen];
    after = idle_figures(study, *study.chosen).mean_reserved;
    rec.idle = true;
    rec.keep_own = false;
    rec.setting = row.setting.label;
    rec.conf = paste_conf(row.setting, false);
    // PyTorch has no idle release, so its string is the base setting's: the row adds only
    // cudapool's own keys (idle release, and maybe expandable_handle_mb: row.handle_mb).
    rec.pytorch_conf = paste_conf(r.candidates[study.base], true);
    Outcome mine, own_outcome;  // the device allocations of the worst log, for the caveat
    for (std::size_t l = 0; l < logs; ++l) {
      mine.device_allocs = std::max(mine.device_allocs, row.outcomes[l].device_allocs);
      own_outcome.device_allocs =
          std::max(own_outcome.device_allocs, r.outcomes[l][0].device_allocs);
    }
    rec.caveats = caveats_for(row.setting, mine, own_outcome);
  }
  rec.mean_reserved = after;
  rec.own_mean_reserved = own;
  std::uint64_t span = 0;
  for (const auto& per_log : r.outcomes) span = std::max(span, per_log[0].span_ns);
  if (span == 0) return;  // no time passes in the logs: nothing held over time to tell
  rec.why += "; held over time (mean reserved";
  rec.why += logs > 1 ? " for the worst of the " + std::to_string(logs) + " logs"
                      : " over the log's " + seconds_text(static_cast<double>(span) / 1e9);
  rec.why += "): " + mean_text(after);
  if (rec.keep_own) {
    rec.why += ", as now";
  } else {
    rec.why += " instead of " + mean_text(own) + " (" +
               percent_text(own > 0.0 ? (after - own) / own : 0.0) + ")";
  }
  if (study.chosen) {
    const IdleFigures f = idle_figures(study, *study.chosen);
    rec.why += " with " + idle_keys(study.rows[*study.chosen]);
    // Idle release may move the peak too (other blocks cached when a request comes).
    if (pool::bytes_text(f.peak_reserved) != pool::bytes_text(idle_figures(study, 0).peak_reserved))
      rec.why += " (peak reserved " + pool::bytes_text(f.peak_reserved) + " with it)";
    rec.why += ", which maps " +
               (f.mapped_again == 0 && f.cost_s == 0.0
                    ? std::string("nothing again")
                    : pool::bytes_text(f.mapped_again) + " again: " + cost_text(f, logs));
  } else if (study.tried() && study.most_saving) {
    const IdleRow& row = study.rows[*study.most_saving];
    const IdleFigures f = idle_figures(study, *study.most_saving);
    if (f.vs_without >= 0.0) {
      rec.why += std::string("; idle release ") +
                 (f.releases == 0 ? "gives nothing back"
                  : logs > 1      ? "holds no less on average in the worst log"
                                  : "holds no less on average") +
                 " at the delays tried (idle_release_ms " + std::to_string(study.rows[1].delay_ms) +
                 " to " + std::to_string(study.rows.back().delay_ms) + ")";
    } else if (f.vs_without > -kIdleMinSaving) {
      rec.why += "; idle release saves little: " + idle_keys(row) + " would hold " +
                 mean_text(f.mean_reserved) + " on average instead of " + mean_text(f.without) +
                 " (" + percent_text(f.vs_without) + ", less than the " +
                 std::to_string(static_cast<int>(kIdleMinSaving * 100)) + "% tune asks)";
    } else {
      rec.why += "; " + idle_keys(row) + " would hold " + mean_text(f.mean_reserved) +
                 " on average instead of " + mean_text(f.without) + ", but maps " +
                 pool::bytes_text(f.mapped_again) + " again: " + cost_text(f, logs) +
                 " (tune allows " + budget_text(study.cost_budget) + ")";
    }
  }
}

}  // namespace cudapool::tune
