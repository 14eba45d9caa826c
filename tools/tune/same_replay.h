// SPDX-License-Identifier: Apache-2.0
// tools/tune/same_replay.h: which of tune's settings replay a log alike, found before the pass so
// that each group is replayed once; the figures are the same, exactly, because the pool makes the
// same decisions in the same order:
// - roundup_power2_divisions changes only the block a request is rounded to (pool/rounding.h
//   round_size; the pool reads the key nowhere else): settings equal in every other key that
//   round every size the log asks for to the same block replay alike.
// - max_split_size (without expandable segments) is only ever compared with a rounded request or
//   a block's size, and a block is never larger than its segment, whose size segment_size_for()
//   gives from the request that made it. A block of a segment below the limit is below it; a
//   segment at or above the limit is either whole or split by a request below the limit, which
//   leaves less than 2 MiB beside it (below any limit PyTorch accepts) unless the segment is a
//   large segment (large_segment_size, for requests of 1 to 10 MiB) above the limit: then no
//   class. A request below the limit never takes an oversize block. So no block size ever lies
//   between two limits that no rounded request and no segment size lies between, every comparison
//   comes out the same, and release_available_cached_blocks(), which searches from the limit, frees
//   the same blocks. Such limits are one class: the number of those sizes below the limit.
// Needs every size the pool can be asked for (first_look.h); without them every setting is
// replayed. Not here: the pass (pass.h), the sweep (sweep.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cudapool::tune {

// For each conf string, the index of the first one it replays alike (its own index when none
// before it does). sizes: every size an alloc or oom event of the logs asks for.
std::vector<std::size_t> replayed_as(const std::vector<std::string>& confs,
                                     const std::vector<std::uint64_t>& sizes);

}  // namespace cudapool::tune
