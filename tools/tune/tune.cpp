// tools/tune/tune.cpp: see tune.h. The first look at the logs, a pass per log, and which of the
// settings replayed are the sweep's; the ranking and the recommendation: recommend.cpp.
#include "tools/tune/tune.h"

#include <algorithm>
#include <limits>
#include <map>
#include <thread>

#include <sstream>

#include "log/read/input.h"
#include "tools/tune/pass.h"
#include "tools/tune/request_bound.h"
#include "tools/tune/same_replay.h"

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

bool run_tune(const std::vector<LogInput>& logs, SweepInputs sweep_in, const TuneOptions& options,
              TuneResult* result, std::string* error) {
  *result = TuneResult{};
  // The split limits tried depend on the largest request, and which settings replay alike on the
  // sizes asked for: a quick look at every log first when each can be read twice; otherwise all
  // of them are replayed.
  std::uint64_t bound = std::numeric_limits<std::uint64_t>::max();
  RequestScan scan;
  scan.sizes_known = false;
  if (std::all_of(logs.begin(), logs.end(), [](const LogInput& l) { return l.rereadable; })) {
    scan.sizes_known = true;
    for (const LogInput& l : logs) {
      const std::shared_ptr<LogSource> in = l.open(error);
      if (!in) return false;
      scan_requests(in->stream(), &scan);
      if (!in->error().empty()) {
        *error = in->error();
        return false;
      }
    }
    bound = scan.bound;
  }
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
  std::vector<std::string> confs;
  for (const Candidate& c : sweep_up_to(sweep_in, bound)) confs.push_back(c.conf);
  // Settings that replay alike are replayed once (same_replay.h).
  std::vector<std::size_t> as(confs.size());
  for (std::size_t k = 0; k < confs.size(); ++k) as[k] = k;
  if (scan.sizes_known) {
    as = replayed_as(confs, std::vector<std::uint64_t>(scan.sizes.begin(), scan.sizes.end()));
  }
  std::vector<std::string> distinct;
  std::vector<std::size_t> slot(confs.size());
  for (std::size_t k = 0; k < confs.size(); ++k) {
    if (as[k] == k) {
      slot[k] = distinct.size();
      distinct.push_back(confs[k]);
    } else {
      slot[k] = slot[as[k]];
    }
  }
  result->settings = confs.size();
  result->replayed = distinct.size();

  PassOptions pass;
  pass.device_memory = options.device_memory;
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  // More workers than settings, and one decoding, would wait.
  pass.threads = std::clamp(threads, 1, static_cast<int>(distinct.size()) + 1);

  std::vector<std::vector<Outcome>> by_conf(logs.size());
  for (std::size_t i = 0; i < logs.size(); ++i) {
    if (!open[i].decoder && !open_log(logs[i], &open[i], error)) return false;
    const std::vector<Outcome> outcomes = replay_pass(*open[i].decoder, distinct, pass);
    for (std::size_t k = 0; k < confs.size(); ++k) by_conf[i].push_back(outcomes[slot[k]]);
    const replay::LogTally& tally = open[i].decoder->tally();
    if (!open[i].input->error().empty()) {  // corrupt compressed data, a read error
      *error = open[i].input->error();
      return false;
    }
    if (!open[i].input->ended_early().empty())
      result->notes.push_back("note: " + open[i].input->ended_early());
    if (tally.allocs == 0) {
      *error = logs[i].path + ": no alloc events (" + std::to_string(tally.lines) + " lines, " +
               std::to_string(tally.malformed_lines) +
               " malformed): nothing to tune; is it a cudapool.log/1 file (CUDAPOOL_LOG)?";
      return false;
    }
    sweep_in.largest_request = std::max(sweep_in.largest_request, tally.largest_request);
    result->logs.push_back(tally);
    open[i] = OpenLog{};  // its input closed
  }

  // The sweep of the largest request, picked from the settings replayed.
  std::map<std::string, std::size_t> replayed;
  for (std::size_t k = 0; k < confs.size(); ++k) replayed.emplace(confs[k], k);
  result->outcomes.assign(logs.size(), {});
  std::string missing;
  for (Candidate& c : sweep(sweep_in)) {
    const auto it = replayed.find(c.conf);
    if (it == replayed.end()) {  // only when a log grew between the first look and the pass
      missing += (missing.empty() ? "" : ", ") + c.label;
      continue;
    }
    for (std::size_t i = 0; i < logs.size(); ++i)
      result->outcomes[i].push_back(by_conf[i][it->second]);
    result->candidates.push_back(std::move(c));
  }
  if (!missing.empty()) {
    result->notes.push_back(
        "note: a log held a larger request when it was replayed than when it was first looked at "
        "(written to meanwhile?): not tried: " +
        missing);
  }
  rank_and_recommend(result);
  return true;
}

}  // namespace cudapool::tune
