// SPDX-License-Identifier: Apache-2.0
// pool/placement.h: where the simulated device puts a new segment, modelled on what the CUDA
// driver did for PyTorch 2.11's cudaMalloc calls on an H200 (driver 580.159.04): it matters
// because PyTorch's best fit breaks ties between equal-size free blocks by address. Not here:
// capacity (simulated_backend.h).
//
// The driver reserves address space in chunks and fills them with segments. Each rule, and the
// segment traces (tests/parity/segment-traces/) where a model without it gets addresses wrong:
//
// | rule                                                                | misses without it      |
// | ------------------------------------------------------------------- | ---------------------- |
// | a segment takes its size in 2 MiB steps inside a chunk; a chunk     | all five (with 2       |
// |   is 32 MiB steps and starts on a 32 MiB boundary                   |   or 64 MiB chunks)    |
// | the newest chunk with room is tried first (not the oldest, not      | roundup_2, the         |
// |   the lowest)                                                       |   three random_mix     |
// | the driver's own free ranges above the chunks (2 MiB at +414        | all five               |
// |   MiB, 24 MiB at +488 MiB) are tried after every chunk              |                        |
// | inside a chunk: the smallest free range that fits, the lowest of    | random_mix_f0.05_gc    |
// |   equal ones, at its start                                          |                        |
// | no chunk has room: a new chunk at the top of the highest released   | the three random_mix   |
// |   range (not the best fitting one) larger than it (an exact fit     |   (exact fit: two)     |
// |   is passed over), else just below the lowest chunk                 |                        |
// | a chunk whose segments are all freed is released, merged with       | roundup_2, the         |
// |   its released neighbours and the free space below the lowest chunk |   three random_mix     |
//
// Replayed through these rules, the driver's segment traces of the five parity cases whose
// predictions depend on addresses (tests/parity/segment-traces/: small_pool, roundup_2,
// random_mix, random_mix_max_split_roundup, random_mix_f0.05_gc; 1134 segments, frees between)
// get every address right relative to the first segment (tests/unit/test_pool_placement.cpp),
// and the replay then predicts all 36 parity cases (docs/parity.md, "Known limits"). The rules
// are what the driver was seen to do, not documented behaviour: another driver, or a process
// that took device memory before PyTorch did, may lay out otherwise.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace cudapool::pool {

class DriverPlacement {
 public:
  // Chunks come down from `ceiling` (rounded down to 32 MiB), never below `floor`; the driver's
  // own free ranges lie above it (at +414 MiB and +488 MiB, as on the H200).
  explicit DriverPlacement(std::uintptr_t ceiling, std::uintptr_t floor = 0);

  // The segment's address; 0 when no chunk has room and a new one would go below the floor.
  std::uintptr_t place(std::size_t bytes);
  void release(std::uintptr_t ptr, std::size_t bytes);

  // The address space a segment of `bytes` takes inside a chunk (2 MiB steps), and the chunk that
  // a segment of `bytes` reserves when none has room (32 MiB steps).
  static std::size_t segment_size(std::size_t bytes);
  static std::size_t chunk_size(std::size_t bytes);

  std::size_t live_chunks() const { return chunks_.size(); }

 private:
  struct Chunk {
    std::uintptr_t start = 0;
    std::size_t size = 0;
    std::map<std::uintptr_t, std::size_t> free;  // free ranges inside, merged
    std::size_t used = 0;                        // bytes of live segments
    std::size_t largest_free = 0;                // the largest of free (its class in by_room_)
    std::uint64_t age = 0;                       // creation order: newer chunks are tried first
    bool driver_own = false;                     // one of the driver's ranges: never released
  };
  static bool fit(const Chunk& c, std::size_t size, std::uintptr_t* at);
  void take(Chunk& c, std::uintptr_t at, std::size_t size);
  void measure(Chunk& c);  // sets largest_free, and the chunk's class in by_room_
  static std::size_t room_class(std::size_t bytes);
  // The newest chunk with a free range of at least `size` bytes, or null.
  Chunk* newest_with_room(std::size_t size);
  std::uintptr_t reserve(std::size_t chunk);
  void unreserve(std::uintptr_t start, std::size_t size);
  Chunk* owner(std::uintptr_t ptr);

  std::map<std::uintptr_t, Chunk> chunks_;          // by start
  std::map<std::uint64_t, std::uintptr_t> by_age_;  // chunk starts by creation order
  // Chunk ages by the largest free range they hold, in 2 MiB classes (the last: kRoomClasses x 2
  // MiB and more): the newest chunk with room is the newest of the classes at or above the
  // segment's, found without visiting the chunks that have none (a pool of 150 GB of 20 MiB
  // segments holds thousands of chunks; visiting them all took 40% of a replay).
  static constexpr std::size_t kRoomClasses = 64;
  std::array<std::set<std::uint64_t>, kRoomClasses + 1> by_room_;
  std::vector<Chunk> driver_;                       // the driver's own ranges, tried last
  std::map<std::uintptr_t, std::size_t> released_;  // released ranges above the frontier, merged
  std::uintptr_t frontier_;                         // the lowest chunk's start: below is free
  std::uintptr_t floor_;                            // no chunk starts below it
  std::uint64_t next_age_ = 0;
};

}  // namespace cudapool::pool
