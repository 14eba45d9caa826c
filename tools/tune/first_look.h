// SPDX-License-Identifier: Apache-2.0
// tools/tune/first_look.h: what tune's sweep needs to know of the requests before its pass, taken
// from the pass's own decoded events, never from a second read of the log: the largest request,
// which decides the split limits tried (sweep.h), and every size the pool is asked for, which says
// which settings replay alike (same_replay.h). The first look decodes the log's first events (up
// to kFirstLookEvents) into the batches the pass then replays first; the pass adds the sizes of
// every later batch to the same RequestSizes, so tune knows at the end whether the look saw them
// all (tune.cpp repairs what it did not: see tune.h). The look also finds the peak of the bytes
// requested, for idle release's floors (idle.h). Not here: the pass (pass.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_set>

#include "tools/replay/recorded_log.h"

namespace cudapool::tune {

// Distinct sizes kept at most: more, and which settings replay alike is not looked at.
inline constexpr std::size_t kMaxScannedSizes = std::size_t{1} << 16;
// Events decoded by the first look (about 64 MiB of batches; a training log of 2,000 allocations
// a step holds about 170 steps in it).
inline constexpr std::size_t kFirstLookEvents = std::size_t{1} << 20;

// The requests of the events added so far: every size of an alloc or oom event (while known) and
// the largest alloc.
struct RequestSizes {
  std::uint64_t largest = 0;
  std::unordered_set<std::uint64_t> sizes;  // while known
  bool known = true;

  void add(const replay::EventBatch& batch);
  // A count that grows whenever something is added that was not there (a size, a larger request,
  // the sizes given up): equal counts, nothing new.
  std::uint64_t changes() const { return changes_; }

 private:
  std::uint64_t changes_ = 0;
  std::uint64_t last_ = ~std::uint64_t{0};  // the last size added (the common case: a repeat)
};

struct FirstLook {
  std::deque<std::shared_ptr<const replay::EventBatch>> batches;  // the first events, in order
  RequestSizes requests;                                          // theirs
  bool whole_log = false;  // the log ended within the look: its requests are all of them
  // The most bytes requested and not yet freed at once over the look's events (all devices):
  // the levels of the idle release floors tried (idle.h), known before the pass.
  std::uint64_t peak_requested = 0;
};

// Decodes up to max_events events of decoder's log (read_header() done) in batches of
// batch_events.
FirstLook first_look(replay::LogDecoder& decoder, std::size_t max_events, std::size_t batch_events);

}  // namespace cudapool::tune
