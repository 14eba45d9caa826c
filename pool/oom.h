// SPDX-License-Identifier: Apache-2.0
// pool/oom.h: what an out-of-memory means. When a request fails after the pool freed what it
// could, the pool records the state (oom_state), and explain_oom turns it into the message the
// shim prints and `cudapool report` repeats: what was asked, the device's and the pool's memory,
// the free cached blocks, and a remedy chosen from that state (a setting that made the segment or
// the block larger than the memory left, fragmentation, the cap, or a real shortage). The text is
// a function of the figures the log's oom event carries (and the cause), so that the report says
// the same from a log (the analysis engine calls this: tools/analyze/oom_figures.h). Plain data
// and text; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cudapool::pool {

enum class OomCause : std::uint8_t {
  kFragmentation,     // enough bytes cached but unallocated, in pieces no request fits
  kCap,               // per_process_memory_fraction refused; the device had room
  kShortage,          // the program holds (nearly) all of the device
  kLargeSegmentSize,  // large_segment_size_mb made the segment (or page) larger than the room
  kRoundup,           // roundup_power2_divisions made the block larger than the room
};

struct OomState {
  std::uint64_t requested = 0;  // bytes the program asked for
  std::uint64_t rounded = 0;    // the block size the pool rounded it to
  // What the pool last asked for and was refused: a segment, the pages of an expandable segment,
  // or (when the cap refused before asking) the segment the cap was checked with.
  std::uint64_t segment_size = 0;
  std::uint64_t device_total = 0;
  std::uint64_t device_free = 0;  // as the driver said after the pool freed its cache
  bool device_free_known = false;
  std::uint64_t cap = 0;          // per_process_memory_fraction x total; 0 without a fraction
  std::uint64_t reserved = 0;     // held by the pool from the device
  std::uint64_t allocated = 0;    // handed to the program
  std::uint64_t free_blocks = 0;  // cached blocks not in use (in segments that cannot go back)
  std::uint64_t largest_free_block = 0;
  // The settings in force that can make a request ask for more than it needs (for classify_oom;
  // not in the log: the cause says which one did).
  std::uint64_t large_segment_size = 0;
  bool expandable = false;
  OomCause cause = OomCause::kShortage;
};

// How the cause is named in the log ("fragmentation", "cap", "shortage", "large_segment_size",
// "roundup").
std::string_view oom_cause_name(OomCause cause);
// The cause from the figures (OomState::cause is set from this), the first that holds of:
// - large_segment_size: the pool was refused one segment of large_segment_size (for a 1-10 MiB
//   block) or one page of it (expandable segments), larger than the block and than the memory
//   left (free on the device, and under the cap), and that memory holds a segment of 12 MiB and
//   the block: a smaller large_segment_size_mb would have served it;
// - roundup: roundup_power2_divisions rounded the request up, the segment for the rounded block
//   did not fit the memory left and one for the request itself would have (no expandable
//   segments);
// - cap: a fraction is set and the device itself still had room for the segment;
// - fragmentation: the bytes reserved but not allocated could hold the request;
// - a shortage otherwise.
OomCause classify_oom(const OomState& state);

// The explanation, several lines, each starting with "cudapool: " (device: the device ordinal).
std::string explain_oom(const OomState& state, int device);

}  // namespace cudapool::pool
