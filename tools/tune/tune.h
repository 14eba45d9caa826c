// tools/tune/tune.h: cudapool tune's engine. Replays every log under every candidate setting
// (sweep.h) in parallel, ranks the candidates per log and over all logs (the worst rank decides),
// and picks the setting to recommend, with why and its caveats. Formatting is tune_report.h; the
// command line main.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/replay/recorded_log.h"
#include "tools/tune/sweep.h"

namespace cudapool::tune {

struct LogInput {
  std::string path;
  replay::RecordedLog log;
};

// One candidate replayed on one log (bytes and counts summed over the log's devices).
struct Outcome {
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_allocated = 0;
  std::uint64_t device_allocs = 0;  // segment allocations and page mappings: cudaMalloc calls
  std::uint64_t device_frees = 0;
  std::uint64_t retries = 0;        // num_alloc_retries: allocations that freed the cache first
  std::uint64_t ooms = 0;           // requests that failed for lack of memory
  std::uint64_t problems = 0;       // lines the replay could not apply (the same for every setting)
  std::uint64_t device_memory = 0;  // of device 0 (or the first), as simulated
};

struct TuneOptions {
  std::optional<std::uint64_t> device_memory;  // --device-memory; else each log's header's
  int threads = 0;                             // 0: all cores
};

struct RankedRow {
  std::size_t candidate = 0;  // index into TuneResult::candidates
  Outcome outcome;
  double vs_own = 0.0;  // peak reserved against the log's own setting, as a fraction (-0.4: -40%)
};

struct Recommendation {
  std::size_t candidate = 0;
  bool keep_own = false;     // nothing tried does better than the log's own settings
  std::string conf;          // for CUDAPOOL_CONF: every key the candidate sets, each once
  std::string pytorch_conf;  // for PYTORCH_CUDA_ALLOC_CONF: the same without cudapool's own keys
  std::string why;
  std::vector<std::string> caveats;
};

struct TuneResult {
  std::vector<Candidate> candidates;
  std::vector<std::vector<Outcome>> outcomes;  // [log][candidate]
  std::vector<std::vector<RankedRow>> ranked;  // [log], best first
  // Over all logs: each candidate's worst (largest) peak reserved, best first; only with several.
  std::vector<RankedRow> worst;
  Recommendation recommendation;
};

// The own setting of a set of logs: the first log's header conf ("" when none).
std::string own_conf(const std::vector<LogInput>& logs);

TuneResult run_tune(const std::vector<LogInput>& logs, const std::vector<Candidate>& candidates,
                    const TuneOptions& options);

// Orders outcomes: no more OOMs than the own setting first, then by peak reserved, then by device
// allocations; the own setting wins a tie. Exposed for tests.
std::vector<RankedRow> rank(const std::vector<Outcome>& outcomes);

// The conf string to paste for candidate c: every key its conf string sets, each once with its
// last value, in the key table's order; with pytorch_keys_only, cudapool's own keys left out.
std::string paste_conf(const Candidate& c, bool pytorch_keys_only);

}  // namespace cudapool::tune
