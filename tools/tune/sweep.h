// SPDX-License-Identifier: Apache-2.0
// tools/tune/sweep.h: the settings cudapool tune tries on a log. Each candidate is the log's own
// settings with a few keys changed (a --try string is such a change too), all under --fraction
// when one is given: the log's own, the
// defaults, expandable segments, max_split_size_mb from 20 MiB up to the largest request,
// roundup_power2_divisions (powers of two and per-size lists), large_segment_size_mb,
// max_non_split_rounding_mb (with a split limit, where it means something),
// garbage_collection_threshold (only with a memory fraction: the pool ignores it without one),
// and the combinations of those that make sense. Not here: running them (tune.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cudapool::tune {

struct Candidate {
  std::string label;    // what changes, in conf-string form ("own" for the log's settings)
  std::string changes;  // the pairs added to the base ("" for the base itself)
  std::string conf;     // the full conf string replayed: base, then changes (later keys win)
  bool user = false;    // from --try
};

struct SweepInputs {
  std::string base_conf;              // the log's own conf string ("" for the defaults)
  std::uint64_t largest_request = 0;  // bytes, over the logs
  std::optional<double> fraction;     // --fraction, else the base's fraction when below 1
  std::vector<std::string> tries;     // --try strings, in order
};

// The candidates in a fixed order: the base first. Duplicates (same conf string) are dropped.
std::vector<Candidate> sweep(const SweepInputs& inputs);

// Every candidate sweep() gives for some largest request up to bound (its split limits differ
// below and above each of them), each conf string once: what a pass replays when it learns the
// largest request only as it goes (sweep() of the exact one picks from them afterwards).
std::vector<Candidate> sweep_up_to(const SweepInputs& inputs, std::uint64_t bound);

// The base of the sweep, the logs' own conf string; its per_process_memory_fraction, when below
// 1, applies to every candidate unless --fraction gave one.
void set_base(SweepInputs* inputs, const std::string& own_conf);

// max_split_size_mb values worth trying below the largest request (MiB): 20 and powers of two.
std::vector<std::uint64_t> split_limits(std::uint64_t largest_request);

}  // namespace cudapool::tune
