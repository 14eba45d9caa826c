// SPDX-License-Identifier: Apache-2.0
// tools/tune/idle.h: idle release in cudapool tune (idle_release_ms, idle_release_floor_mb:
// docs/pool-policy.md, "Idle release"): the idle variants of one setting (idle_release_ms at
// kIdleDelaysMs, and the shortest of them, which gives back most, with idle_release_floor_mb at
// a quarter and a half of the peak of bytes requested that the first look saw; under expandable
// segments every delay again with larger handles, kIdleHandlesMb), their figures
// against the same setting without idle release (memory held over time, memory mapped again and
// the time that costs: idle_costs.h), and the choice among them. The variants are known before
// the pass (the floors from the first look, first_look.h), so that a log read once has the same
// ones in its one pass as a file in its second, and tune's output is the same either way. Not here:
// the passes that replay them and the study of a tune (tune.h study_idle), the recommendation's
// words (recommend.cpp), printing (tune_report.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/options.h"
#include "tools/tune/idle_costs.h"
#include "tools/tune/outcome.h"
#include "tools/tune/sweep.h"

namespace cudapool::tune {

// The delays tried, shortest first: a log whose span is shorter than the first gets none.
inline constexpr std::uint64_t kIdleDelaysMs[] = {100, 200, 500, 1000, 2000, 5000, 10000};
inline constexpr std::uint64_t kNsPerMs = 1000000;

struct IdleRow {
  Candidate setting;              // label: the changes against the log's own; conf: replayed
  std::uint64_t delay_ms = 0;     // idle_release_ms; 0: the setting without idle release (row 0)
  std::uint64_t floor_mb = 0;     // the idle_release_floor_mb the row adds (0: none added)
  std::uint64_t handle_mb = 0;    // the expandable_handle_mb the row adds (0: the setting's)
  std::vector<Outcome> outcomes;  // one per log
};

// A row against row 0, the same setting without idle release. Over several logs: the largest
// means, and the cost of the log where it is the largest share of the span.
struct IdleFigures {
  double mean_reserved = 0.0;  // time-weighted mean of reserved bytes (Outcome::mean_reserved)
  double without = 0.0;        // row 0's
  double vs_without = 0.0;     // mean_reserved against without, as a fraction (-0.4: -40%)
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_without = 0;  // row 0's
  std::uint64_t mapped_again = 0;  // bytes taken from the device beyond row 0's (none: 0)
  double mappings_again = 0.0;     // the handles (expandable segments) or segments that takes
  double cost_s = 0.0;             // what mapping them again costs (idle_costs.h)
  double cost_share = 0.0;         // cost_s over the log's span
  std::uint64_t span_ns = 0;       // that span
  std::uint64_t releases = 0;      // idle clock ticks that gave memory back
  std::uint64_t released_bytes = 0;
};

struct IdleStudy {
  std::string not_tried;      // why idle release was not tried; "" when it was
  std::size_t base = 0;       // the candidate whose variants these are (TuneResult::candidates)
  std::vector<IdleRow> rows;  // row 0: base without idle release; then the variants tried
  std::optional<std::size_t> chosen;       // the row recommended (idle_affordable, least held)
  std::optional<std::size_t> most_saving;  // the variant that holds least, whatever it costs
  double cost_budget = kIdleCostBudget;    // the share of the span a variant may cost (--idle-cost)
  bool tried() const { return not_tried.empty() && rows.size() > 1; }
};

// The idle keys a row adds to its setting: "idle_release_ms:200,idle_release_floor_mb:512";
// row 0's: "none" (or "idle_release_ms:0" where its setting had idle release on).
std::string idle_keys(const IdleRow& row);

IdleFigures idle_figures(const IdleStudy& study, std::size_t row);
// Within cost_budget of the span (the study's: kIdleCostBudget unless --idle-cost), at least
// kIdleMinSaving below row 0's mean, and a peak within kIdlePeakTolerance of row 0's.
bool idle_affordable(const IdleFigures& figures, double cost_budget = kIdleCostBudget);
// Picks study->chosen and study->most_saving from its rows.
void choose_idle(IdleStudy* study);

// The setting without idle release (row 0) of base: base itself when its idle release is off,
// else base with idle_release_ms:0 (*same: whether it is base itself).
Candidate without_idle(const Candidate& base, bool* same);
// base with idle_release_ms:delay_ms (and idle_release_floor_mb:floor_mb, expandable_handle_mb:
// handle_mb, each when not 0).
Candidate idle_variant(const Candidate& base, std::uint64_t delay_ms, std::uint64_t floor_mb,
                       std::uint64_t handle_mb = 0);
// The bytes of one handle of the large pool under options (expandable_handle_mb's whole pages, at
// least one page).
std::size_t handle_bytes(const config::Options& options);
// The larger handles tried with every delay on a setting with expandable segments (MiB, those
// whose handle is larger than its own): mapping costs per handle (idle_costs.h), so memory given
// back in 1 GiB handles costs about 50 times less to map again than in PyTorch's 20 MiB pages,
// and the segment still grows by its own pages (the peak stays).
inline constexpr std::uint64_t kIdleHandlesMb[] = {256, 1024};
std::vector<std::uint64_t> idle_handles_mb(const Candidate& base);
// The delays worth trying on logs whose longest span is span_ns (none releases anything in a
// shorter one); every delay when the span is not known (nullopt).
std::vector<std::uint64_t> idle_delays(std::optional<std::uint64_t> span_ns);
// The floors tried with the shortest delay: a quarter and a half of peak_requested (the first
// look's), rounded to MiB, each above 0, once.
std::vector<std::uint64_t> idle_floors_mb(std::uint64_t peak_requested);
// The rows of a study of base (row 0 first) on logs whose longest span is span_ns (nullopt: not
// known, every delay), floors_mb with the shortest delay, then every delay with each of
// idle_handles_mb(base).
std::vector<IdleRow> idle_rows(const Candidate& base, std::optional<std::uint64_t> span_ns,
                               const std::vector<std::uint64_t>& floors_mb);
// What the first pass over logs read once replays beside the sweep (whose candidates are given):
// the rows of own and of expandable_segments:True, every delay.
std::vector<std::string> read_once_idle_confs(const std::vector<Candidate>& sweep,
                                              const std::vector<std::uint64_t>& floors_mb);

}  // namespace cudapool::tune
