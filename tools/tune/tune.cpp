// SPDX-License-Identifier: Apache-2.0
// tools/tune/tune.cpp: see tune.h. The first look, the pass over the logs (and a second one where
// the look missed requests or a watched setting parted), and which replay each setting of the
// sweep takes; the ranking and the recommendation: recommend.cpp.
#include "tools/tune/tune.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <thread>

#include <sstream>

#include "log/read/input.h"
#include "tools/tune/first_look.h"
#include "tools/tune/pass.h"
#include "tools/tune/same_replay.h"
#include "tools/tune/shadows.h"

namespace cudapool::tune {

namespace {

class FileSource : public LogSource {
 public:
  cudapool::log::LogInput input;
  std::istream& stream() override { return input.stream(); }
  std::string error() const override { return input.error(); }
  std::string ended_early() const override { return input.ended_early(); }
};

class TextSource : public LogSource {
 public:
  explicit TextSource(std::string text) : in_(std::move(text)) {}
  std::istream& stream() override { return in_; }

 private:
  std::istringstream in_;
};

struct OpenLog {
  std::shared_ptr<LogSource> input;
  std::unique_ptr<replay::LogDecoder> decoder;
};

// Opens a log and reads up to its first event: its header is known then.
bool open_log(const LogInput& in, OpenLog* out, std::string* error) {
  out->input = in.open(error);
  if (!out->input) return false;
  out->decoder = std::make_unique<replay::LogDecoder>(out->input->stream());
  out->decoder->read_header();
  return true;
}

}  // namespace

std::shared_ptr<LogSource> from_file(const std::string& path, bool progress, std::string* error) {
  cudapool::log::InputOptions options;
  options.progress = progress;
  auto source = std::make_shared<FileSource>();
  if (!source->input.open(path, error, options)) return nullptr;
  return source;
}

std::shared_ptr<LogSource> in_memory(std::string text) {
  return std::make_shared<TextSource>(std::move(text));
}

namespace {

std::vector<std::size_t> identity(std::size_t n) {
  std::vector<std::size_t> out(n);
  std::iota(out.begin(), out.end(), std::size_t{0});
  return out;
}

// Which setting's replay each setting takes (same_replay.h; every setting its own when the sizes
// are not known).
std::vector<std::size_t> replays_of(const std::vector<std::string>& confs,
                                    const RequestSizes& requests) {
  if (!requests.known) return identity(confs.size());
  std::vector<std::uint64_t> sizes(requests.sizes.begin(), requests.sizes.end());
  std::sort(sizes.begin(), sizes.end());
  return replayed_as(confs, sizes);
}

std::vector<std::string> confs_up_to(const SweepInputs& in, std::uint64_t bound) {
  std::vector<std::string> confs;
  for (const Candidate& c : sweep_up_to(in, bound)) confs.push_back(c.conf);
  return confs;
}

// The outcomes of the settings replayed so far: conf string -> one per log.
using Replayed = std::map<std::string, std::vector<Outcome>>;

// Replays every log under the groups' settings (each log opened unless open[i] already is; the
// first log starts with first_batches), adding each replayed setting's outcomes to *replayed, and
// those of each watched setting that no log's replay told apart (shadows.h), and each log's tally
// to *tallies (when not null).
bool pass_over(const std::vector<LogInput>& logs, std::vector<OpenLog>& open,
               std::deque<std::shared_ptr<const replay::EventBatch>> first_batches,
               const std::vector<std::string>& confs, const std::vector<ShadowGroup>& groups,
               const PassOptions& pass, RequestSizes* requests, Replayed* replayed,
               std::vector<replay::LogTally>* tallies, std::vector<std::string>* notes,
               std::string* error) {
  const std::vector<PassSetting> settings = pass_settings(confs, groups);
  std::vector<std::uint64_t> parted(groups.size(), 0);
  for (std::size_t i = 0; i < logs.size(); ++i) {
    if (!open[i].decoder && !open_log(logs[i], &open[i], error)) return false;
    const std::vector<PassResult> results = replay_pass(
        *open[i].decoder, settings, pass,
        i == 0 ? std::move(first_batches) : std::deque<std::shared_ptr<const replay::EventBatch>>{},
        requests);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      (*replayed)[settings[g].conf].push_back(results[g].outcome);
      parted[g] |= results[g].parted;
    }
    const replay::LogTally& tally = open[i].decoder->tally();
    if (!open[i].input->error().empty()) {  // corrupt compressed data, a read error
      *error = open[i].input->error();
      return false;
    }
    if (!open[i].input->ended_early().empty())
      notes->push_back("note: " + open[i].input->ended_early());
    if (tally.allocs == 0) {
      *error = logs[i].path + ": no alloc events (" + std::to_string(tally.lines) + " lines, " +
               std::to_string(tally.malformed_lines) +
               " malformed): nothing to tune; is it a cudapool.log/1 file (CUDAPOOL_LOG)?";
      return false;
    }
    if (tallies != nullptr) tallies->push_back(tally);
    open[i] = OpenLog{};  // its input closed
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t w = 0; w < groups[g].watched.size(); ++w) {
      if ((parted[g] >> w & 1) == 0) {
        (*replayed)[confs[groups[g].watched[w]]] = replayed->at(confs[groups[g].replayed]);
      }
    }
  }
  return true;
}

std::vector<ShadowGroup> each_alone(std::size_t n) {
  std::vector<ShadowGroup> out;
  for (std::size_t k = 0; k < n; ++k) out.push_back(ShadowGroup{k, {}});
  return out;
}

}  // namespace

bool run_tune(const std::vector<LogInput>& logs, SweepInputs sweep_in, const TuneOptions& options,
              TuneResult* result, std::string* error) {
  *result = TuneResult{};
  // The own settings: the first log's header with a conf string (the next logs' headers are
  // looked at only when it has none; their decoders wait, their input read up to the header).
  std::vector<OpenLog> open(logs.size());
  std::string own;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    if (!open_log(logs[i], &open[i], error)) return false;
    const replay::LogHeader& header = open[i].decoder->tally().header;
    if (header.conf) {
      own = *header.conf;
      break;
    }
  }
  set_base(&sweep_in, own);
  result->fraction = sweep_in.fraction;

  // The split limits tried depend on the largest request, and which settings replay alike on the
  // sizes asked for: both from the first look at the first log. They hold when the look saw the
  // whole of the only log; when the logs can be read again, the pass tells what the look missed
  // and a second pass replays the settings that it separates (or adds); otherwise (a log read
  // once, longer than the look) every split limit and every setting is replayed.
  FirstLook look = first_look(*open[0].decoder, options.first_look_events, kBatchEvents);
  RequestSizes& requests = look.requests;
  const std::uint64_t looked = requests.changes();
  const bool all_seen = logs.size() == 1 && look.whole_log;
  const bool rereadable =
      std::all_of(logs.begin(), logs.end(), [](const LogInput& l) { return l.rereadable; });
  const bool from_look = all_seen || rereadable;
  // Logs read once replay the idle variants of own and of expandable segments (idle.h) in the
  // first pass too: there is no second one for the variants of the setting recommended. Their
  // floors come from the look, so a file's second pass replays the same.
  const std::vector<std::uint64_t> floors_mb = idle_floors_mb(look.peak_requested);
  const auto all_confs = [&](std::uint64_t bound) {
    std::vector<std::string> out = confs_up_to(sweep_in, bound);
    if (rereadable || !options.try_idle) return out;
    for (std::string& c : read_once_idle_confs(sweep_up_to(sweep_in, bound), floors_mb)) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
    }
    return out;
  };
  std::vector<std::string> confs =
      all_confs(from_look ? requests.largest : std::numeric_limits<std::uint64_t>::max());
  std::vector<std::size_t> as = from_look ? replays_of(confs, requests) : identity(confs.size());

  PassOptions pass;
  pass.device_memory = options.device_memory;
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  // Settings equal but for the split limits are watched beside one replay (shadows.h) when the
  // logs can be read again: one that the pass tells apart after the look is replayed in a second.
  const bool watch = rereadable && options.watch_split_limits;
  auto replay = [&](const std::vector<std::string>& distinct, Replayed* replayed,
                    std::vector<replay::LogTally>* tallies,
                    std::deque<std::shared_ptr<const replay::EventBatch>> first_batches,
                    RequestSizes* watched) {
    std::vector<ShadowGroup> groups = each_alone(distinct.size());
    if (watch && !first_batches.empty()) {
      pass.threads = std::max(threads, 1);
      groups =
          settle_on_look(*open[0].decoder, distinct, split_groups(distinct), pass, first_batches);
    }
    // More workers than settings, and one decoding, would wait.
    pass.threads = std::clamp(threads, 1, static_cast<int>(groups.size()) + 1);
    result->replayed += groups.size();
    return pass_over(logs, open, std::move(first_batches), distinct, groups, pass, watched,
                     replayed, tallies, &result->notes, error);
  };
  auto unreplayed = [&](const Replayed& replayed) {
    std::vector<std::string> distinct;
    for (std::size_t k = 0; k < confs.size(); ++k) {
      if (as[k] == k && !replayed.contains(confs[k])) distinct.push_back(confs[k]);
    }
    return distinct;
  };

  // The first pass watches for requests the look did not see only when a second could replay
  // what they change.
  const bool repairable = from_look && !all_seen;
  Replayed replayed;
  if (!replay(unreplayed(replayed), &replayed, &result->logs, std::move(look.batches),
              repairable ? &requests : nullptr)) {
    return false;
  }
  for (const replay::LogTally& tally : result->logs) {
    sweep_in.largest_request = std::max(sweep_in.largest_request, tally.largest_request);
  }
  if (repairable && requests.changes() != looked) {
    // The pass found requests the look did not: the settings now known to replay apart from the
    // one replayed for them, and the split limits up to a larger request, are replayed again.
    confs = all_confs(requests.largest);
    as = replays_of(confs, requests);
  }
  // A further pass over the logs (files), replaying settings the first did not.
  const auto replay_again = [&](const std::vector<std::string>& more) {
    std::vector<replay::LogTally> tallies;
    if (!replay(more, &replayed, &tallies, {}, nullptr)) return false;
    for (std::size_t i = 0; i < logs.size(); ++i) {
      const std::string note = "note: " + logs[i].path +
                               " changed between tune's passes over it (written to meanwhile?): "
                               "the figures of some settings are of its new lines";
      if (tallies[i].lines != result->logs[i].lines &&
          std::find(result->notes.begin(), result->notes.end(), note) == result->notes.end()) {
        result->notes.push_back(note);
      }
    }
    return true;
  };
  // Those, and the watched settings that the pass told apart from their group's replay.
  const std::vector<std::string> again = unreplayed(replayed);
  if (!again.empty() && !replay_again(again)) return false;
  result->settings = confs.size();

  // The sweep of the largest request, each setting with the figures of the replay it takes.
  result->outcomes.assign(logs.size(), {});
  std::map<std::string, std::size_t> index;
  for (std::size_t k = 0; k < confs.size(); ++k) index.emplace(confs[k], k);
  for (Candidate& c : sweep(sweep_in)) {
    const std::vector<Outcome>& outcomes = replayed.at(confs[as[index.at(c.conf)]]);
    for (std::size_t i = 0; i < logs.size(); ++i) result->outcomes[i].push_back(outcomes[i]);
    result->candidates.push_back(std::move(c));
  }
  rank_and_recommend(result);

  // Idle release for the setting recommended: its variants replayed in one more pass, or taken
  // from the first pass over logs read once.
  const OutcomesOf outcomes_of = [&](const std::string& conf) -> const std::vector<Outcome>* {
    const auto k = index.find(conf);
    const auto it = replayed.find(k != index.end() ? confs[as[k->second]] : conf);
    return it == replayed.end() ? nullptr : &it->second;
  };
  const ReplayMore replay_more = [&](const std::vector<std::string>& more) {
    result->settings += more.size();
    return replay_again(more);
  };
  if (!options.try_idle) {
    result->idle.not_tried = "idle release not tried (--no-idle)";
    recommend_idle(result);
    return true;
  }
  return study_idle(result, !rereadable, floors_mb, replay_more, outcomes_of,
                    options.idle_cost_budget);
}
}  // namespace cudapool::tune
