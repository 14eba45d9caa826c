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

}  // namespace cudapool::tune
