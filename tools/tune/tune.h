// SPDX-License-Identifier: Apache-2.0
// tools/tune/tune.h: cudapool tune's engine. Reads every log once, in one pass that feeds every
// candidate setting's pool (pass.h), ranks the candidates per log and over all logs (the worst
// rank decides), and picks the setting to recommend, with why and its caveats; then tries idle
// release on that setting (idle.h), in a further pass over the logs where they can be read again
// (in the first, for own and expandable segments, where they cannot), and recommends an idle
// delay where it holds less memory over time at a small cost. What the sweep
// needs before the pass: the own settings from the first header (LogDecoder::read_header), and
// from the first look at the first log's first events (first_look.h), which the pass then replays
// first, the largest request, which decides the split limits tried, and the sizes asked for, which
// say which settings replay alike (same_replay.h: those are replayed once). The look holds when it
// saw the whole of the only log. Otherwise, when every log can be read again (a regular file), the
// pass adds the requests it decodes, and where it found any the look had not seen, the settings
// they separate from the replay they took (and the split limits up to a larger request) are
// replayed in a second pass: the figures are those of replaying every setting, whatever the look
// saw. A longer log read once (stdin, a FIFO) has every split limit and every setting replayed,
// and the split limits above its largest request dropped afterwards.
// Formatting is tune_report.h; the command line main.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/replay/recorded_log.h"
#include "tools/tune/first_look.h"
#include "tools/tune/idle.h"
#include "tools/tune/outcome.h"
#include "tools/tune/sweep.h"

namespace cudapool::tune {

// A log opened for reading: its plain bytes, and after they are read, whether it could be read
// to its end. from_file: a path or - (plain, gzip or zstd: log/read/input.h); in_memory: a text
// (tests).
class LogSource {
 public:
  virtual ~LogSource() = default;
  virtual std::istream& stream() = 0;
  virtual std::string error() const { return {}; }        // why it could not be read to its end
  virtual std::string ended_early() const { return {}; }  // a compressed input cut in a frame
};
// Opens path ("-": standard input): null with *error set when it cannot be read.
std::shared_ptr<LogSource> from_file(const std::string& path, bool progress, std::string* error);
std::shared_ptr<LogSource> in_memory(std::string text);

struct LogInput {
  std::string path;  // as the output names it
  // Opens the log from its start: null with *error set when it cannot be read.
  std::function<std::shared_ptr<LogSource>(std::string* error)> open;
  bool rereadable = false;  // open() may be called twice: a second pass may read it again
};

struct TuneOptions {
  std::optional<std::uint64_t> device_memory;        // --device-memory; else each log's header's
  int threads = 0;                                   // 0: all cores
  std::size_t first_look_events = kFirstLookEvents;  // (tests: fewer)
  // Settings that differ only in split limits watched beside one replay (shadows.h); off: each
  // replayed (tests: the figures must be the same).
  bool watch_split_limits = true;
  // Idle release tried on the setting recommended (idle.h); off: --no-idle.
  bool try_idle = true;
  // The share of the log's span an idle variant may cost to be recommended (--idle-cost PCT).
  double idle_cost_budget = kIdleCostBudget;
};

struct RankedRow {
  std::size_t candidate = 0;  // index into TuneResult::candidates
  Outcome outcome;
  double vs_own = 0.0;  // peak reserved against the log's own setting, as a fraction (-0.4: -40%)
};

struct Recommendation {
  std::size_t candidate = 0;  // by peak (with an idle variant: the setting it is a variant of)
  bool keep_own = false;      // nothing tried does better than the log's own settings
  std::string setting;        // the label of what is recommended (an idle variant's: idle.h)
  bool idle = false;          // an idle variant (TuneResult::idle.chosen) is recommended
  // Memory held over time, of what is recommended and of the log's own (Outcome::mean_reserved;
  // over several logs the worst log's).
  double mean_reserved = 0.0;
  double own_mean_reserved = 0.0;
  std::string conf;  // for CUDAPOOL_CONF: every key the candidate sets, each once
  // For PYTORCH_CUDA_ALLOC_CONF: the same without cudapool's own keys; for an idle variant, its
  // base setting's (the variant adds only cudapool's own keys: idle.h IdleRow).
  std::string pytorch_conf;
  std::string why;
  std::vector<std::string> caveats;
};

struct TuneResult {
  std::vector<Candidate> candidates;
  std::vector<replay::LogTally> logs;          // what each log's lines said (its events aside)
  std::optional<double> fraction;              // the fraction every candidate ran under
  std::vector<std::vector<Outcome>> outcomes;  // [log][candidate]
  std::vector<std::vector<RankedRow>> ranked;  // [log], best first
  // Over all logs: each candidate's worst (largest) peak reserved, best first; only with several.
  std::vector<RankedRow> worst;
  Recommendation recommendation;
  std::size_t settings = 0;  // settings tried (more than candidates: see above)
  std::size_t replayed = 0;  // pools replayed: settings that replay alike share one (same_replay.h)
  std::vector<std::string> notes;  // for stderr
  IdleStudy idle;                  // idle release for the setting recommended by peak (idle.h)
};

// Tunes the logs in order: sweep_in's fraction and tries (the base and the largest request come
// from the logs). false with *error set when a log cannot be read or holds no allocation.
bool run_tune(const std::vector<LogInput>& logs, SweepInputs sweep_in, const TuneOptions& options,
              TuneResult* result, std::string* error);

// Ranks the outcomes of every log, the worst over several, and recommends (result's candidates
// and outcomes filled in).
void rank_and_recommend(TuneResult* result);

// Idle release (idle.h) for the setting rank_and_recommend recommended by peak (the own one when
// it keeps the own), floors_mb with the shortest delay: its variants' outcomes come from
// outcomes_of(conf) (null: not replayed), those missing from replay_more(confs), which replays
// them over the logs (false: it failed, with its error set); with read_once, nothing is replayed
// (the first pass replayed read_once_idle_confs) and a setting whose variants it lacks is not
// studied. Fills result->idle, and then recommend_idle. false when replay_more failed.
using ReplayMore = std::function<bool(const std::vector<std::string>& confs)>;
using OutcomesOf = std::function<const std::vector<Outcome>*(const std::string& conf)>;
bool study_idle(TuneResult* result, bool read_once, const std::vector<std::uint64_t>& floors_mb,
                const ReplayMore& replay_more, const OutcomesOf& outcomes_of,
                double cost_budget = kIdleCostBudget);
// Amends the recommendation with result->idle: the chosen idle variant instead of its setting
// (conf strings, caveat), and in why the memory held over time (mean reserved before and after),
// or, with none chosen, the variant that would hold least and what it would cost.
void recommend_idle(TuneResult* result);

// Orders outcomes: no more OOMs than the own setting first, then by peak reserved, then by device
// allocations; the own setting wins a tie. Exposed for tests.
std::vector<RankedRow> rank(const std::vector<Outcome>& outcomes);

// The conf string to paste for candidate c: every key its conf string sets, each once with its
// last value, in the key table's order; with pytorch_keys_only, cudapool's own keys left out.
std::string paste_conf(const Candidate& c, bool pytorch_keys_only);

}  // namespace cudapool::tune
