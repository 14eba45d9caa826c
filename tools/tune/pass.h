// SPDX-License-Identifier: Apache-2.0
// tools/tune/pass.h: one pass over one log for cudapool tune: the log is decoded once, in batches
// of events (recorded_log.h), and every batch is replayed by every setting's pool (a Replayer per
// conf string), on worker threads that share the decoded batches. Any worker decodes the next
// batch when the decoder is free and fewer than kMaxBatches are held; otherwise it takes the
// setting that lags most and replays its next batch (each setting's batches in order, so the
// result does not depend on the threads). A batch is dropped once every setting has replayed it:
// the memory is the batches held and the pools' live state, never the log's length. The pass
// starts with the batches the first look decoded (first_look.h) and adds the requests of every
// batch it decodes to the first look's RequestSizes. Not here: which settings (sweep.h), the
// ranking (tune.h).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/replay/recorded_log.h"
#include "tools/replay/replayer.h"
#include "tools/tune/first_look.h"
#include "tools/tune/outcome.h"

namespace cudapool::tune {

// Events a batch holds (2 MiB of them), and the batches held at most. A setting's pool is cold
// when its worker comes back to it (2 cores, 1 MiB of L2 each, a pool of a few thousand live
// blocks): batches of 4096 events cost 30% more than replaying a setting at a time, 32768 a few
// percent (docs/tune.md, "Speed").
inline constexpr std::size_t kBatchEvents = 32768;
inline constexpr std::size_t kMaxBatches = 4;

struct PassOptions {
  std::optional<std::uint64_t> device_memory;  // --device-memory; else the log header's
  int threads = 1;                             // workers, the calling thread included
  std::size_t batch_events = kBatchEvents;     // (tests: smaller)
  std::size_t max_batches = kMaxBatches;
  bool decoded_only = false;  // replay the batches given only; the decoder is not read
  // With decoded_only: a setting with shadows stops once every shadow has parted (its outcome is
  // then of the events up to there: for the parted bits only).
  bool until_parted = false;
};

// A setting to replay, and other split limits watched beside it (pool/split_shadows.h).
struct PassSetting {
  std::string conf;
  std::vector<pool::SplitLimits> shadows;
};

struct PassResult {
  Outcome outcome;
  std::uint64_t parted = 0;  // bit i: shadows[i] replays otherwise (Replayer::parted)
};

// What one setting's replay came to (after finish()).
Outcome outcome_of(const replay::Replayer& replayer);

// Replays the batches already decoded (the first of the log, in order), then the rest of
// decoder's log (read_header() done; not with decoded_only), under each setting: the results in
// the same order. The decoder's tally is final afterwards. With requests, the requests of every
// batch decoded here are added to it.
std::vector<PassResult> replay_pass(
    replay::LogDecoder& decoder, const std::vector<PassSetting>& settings,
    const PassOptions& options, std::deque<std::shared_ptr<const replay::EventBatch>> decoded = {},
    RequestSizes* requests = nullptr);
// The same without shadows: the outcomes only.
std::vector<Outcome> replay_pass(replay::LogDecoder& decoder, const std::vector<std::string>& confs,
                                 const PassOptions& options,
                                 std::deque<std::shared_ptr<const replay::EventBatch>> decoded = {},
                                 RequestSizes* requests = nullptr);

}  // namespace cudapool::tune
