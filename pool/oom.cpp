// SPDX-License-Identifier: Apache-2.0
// pool/oom.cpp: see oom.h. `cudapool report` prints this same text from a log's oom event (the
// analysis engine calls explain_oom: tools/analyze/oom_figures.h); tests/fakecuda/oom_causes.sh
// compares the shim's stderr with the report.
#include "pool/oom.h"

#include <bit>
#include <cstdio>

#include "pool/bytes_text.h"
#include "pool/constants.h"
#include "pool/rounding.h"

namespace cudapool::pool {

namespace {

constexpr std::uint64_t kMiB = 1 << 20;
// The smallest large_segment_size_mb worth advising: above 10 MiB and a whole number of the
// driver's 2 MiB pages, so that it serves expandable segments too.
constexpr std::uint64_t kSmallestLargeSegment = 12 * kMiB;
constexpr std::uint64_t kDefaultLargeSegment = 20 * kMiB;
// roundup_power2_divisions accepts at most 2^54 (config/key_values.cpp).
constexpr std::uint64_t kMaxDivisions = std::uint64_t{1} << 54;

std::string bytes(std::uint64_t b) {
  return bytes_text(b);
}

std::uint64_t round_up(std::uint64_t bytes, std::uint64_t step) {
  return bytes % step == 0 ? bytes : bytes + (step - bytes % step);
}

// The memory a new segment could have had: what the device had free, and under the cap what the
// cap left; false when neither is known.
bool room_of(const OomState& s, std::uint64_t* room, bool* cap_binds) {
  const std::uint64_t under_cap = s.cap > s.reserved ? s.cap - s.reserved : 0;
  *cap_binds = s.cap != 0 && (!s.device_free_known || under_cap < s.device_free);
  if (*cap_binds) {
    *room = under_cap;
  } else if (s.device_free_known) {
    *room = s.device_free;
  } else {
    return false;
  }
  return true;
}

// The request rounded to whole 512-byte blocks (roundup_power2_divisions off).
std::uint64_t plain_block(std::uint64_t requested) {
  return round_up(requested, kMinBlockSize);
}

// The fewest divisions (a power of two) whose block for `requested` gets a segment of at most
// `room` bytes; 0 when none does (round_size's rule for sizes of 10 MiB and more).
std::uint64_t divisions_that_fit(std::uint64_t requested, std::uint64_t room) {
  for (std::uint64_t d = 2; d <= kMaxDivisions; d *= 2) {
    const std::uint64_t block = requested > kMinBlockSize * d
                                    ? round_to_power2_division(requested, d)
                                    : plain_block(requested);
    if (round_up(block, kRoundLarge) <= room) return d;
  }
  return 0;
}

bool large_segment_size_caused(const OomState& s, std::uint64_t room) {
  // The segment refused is the setting's: one segment for a block of 1-10 MiB, or one page of an
  // expandable segment's large pool.
  const bool setting_sized = s.segment_size == s.large_segment_size && s.rounded > kSmallSize &&
                             s.rounded < s.segment_size &&
                             (s.expandable || s.rounded < kMinLargeAlloc);
  return setting_sized && s.segment_size > room && room >= kSmallestLargeSegment &&
         room >= round_up(s.rounded, kRoundLarge);
}

bool roundup_caused(const OomState& s, std::uint64_t room) {
  const std::uint64_t plain = plain_block(s.requested);
  return !s.expandable && s.rounded > plain && plain >= kMinLargeAlloc &&
         s.segment_size == round_up(s.rounded, kRoundLarge) && s.segment_size > room &&
         round_up(plain, kRoundLarge) <= room;
}

}  // namespace

std::string_view oom_cause_name(OomCause cause) {
  switch (cause) {
    case OomCause::kFragmentation:
      return "fragmentation";
    case OomCause::kCap:
      return "cap";
    case OomCause::kShortage:
      return "shortage";
    case OomCause::kLargeSegmentSize:
      return "large_segment_size";
    case OomCause::kRoundup:
      return "roundup";
  }
  return "shortage";
}

OomCause classify_oom(const OomState& s) {
  std::uint64_t room = 0;
  bool cap_binds = false;
  if (s.rounded != 0 && room_of(s, &room, &cap_binds)) {
    if (large_segment_size_caused(s, room)) return OomCause::kLargeSegmentSize;
    if (roundup_caused(s, room)) return OomCause::kRoundup;
  }
  if (s.cap != 0 && s.reserved + s.segment_size > s.cap &&
      (!s.device_free_known || s.device_free >= s.segment_size)) {
    return OomCause::kCap;
  }
  const std::uint64_t unallocated = s.reserved > s.allocated ? s.reserved - s.allocated : 0;
  if (s.rounded != 0 && unallocated >= s.rounded) return OomCause::kFragmentation;
  return OomCause::kShortage;
}

std::string explain_oom(const OomState& s, int device) {
  std::string out;
  char line[640];
  const std::uint64_t unallocated = s.reserved > s.allocated ? s.reserved - s.allocated : 0;
  std::snprintf(line, sizeof line,
                "cudapool: out of memory on device %d: tried to allocate %s (a block of %s, from "
                "a new segment of %s)\n",
                device, bytes(s.requested).c_str(), bytes(s.rounded).c_str(),
                bytes(s.segment_size).c_str());
  out += line;
  std::snprintf(
      line, sizeof line, "cudapool:   device: %s total, %s free%s\n", bytes(s.device_total).c_str(),
      s.device_free_known ? bytes(s.device_free).c_str() : "(unknown)",
      s.cap != 0 ? (", cap " + bytes(s.cap) + " (per_process_memory_fraction)").c_str() : "");
  out += line;
  std::snprintf(line, sizeof line,
                "cudapool:   pool: %s reserved, %s allocated, %s reserved but unallocated in %llu "
                "free cached block%s (the largest %s)\n",
                bytes(s.reserved).c_str(), bytes(s.allocated).c_str(), bytes(unallocated).c_str(),
                static_cast<unsigned long long>(s.free_blocks), s.free_blocks == 1 ? "" : "s",
                bytes(s.largest_free_block).c_str());
  out += line;
  std::uint64_t room = 0;
  bool cap_binds = false;
  room_of(s, &room, &cap_binds);
  const char* const under_cap = cap_binds ? " under the cap (per_process_memory_fraction)" : "";
  switch (s.cause) {
    case OomCause::kCap: {
      // Summed as doubles: figures read back from a log may be near 2^64 (no wrap).
      const double need =
          s.device_total != 0
              ? (static_cast<double>(s.reserved) + static_cast<double>(s.segment_size)) /
                    static_cast<double>(s.device_total)
              : 1.0;
      std::snprintf(line, sizeof line,
                    "cudapool:   why: the memory cap refused it, the device had room. Raise "
                    "per_process_memory_fraction to at least %.2f, or unset it\n",
                    need > 1.0 ? 1.0 : need + 0.005);
      break;
    }
    case OomCause::kFragmentation:
      std::snprintf(line, sizeof line,
                    "cudapool:   why: fragmentation: %s is reserved but unallocated, yet no free "
                    "block holds %s. Try expandable_segments:True, or see what `cudapool tune` "
                    "finds for a log of this run (CUDAPOOL_LOG)\n",
                    bytes(unallocated).c_str(), bytes(s.rounded).c_str());
      break;
    case OomCause::kShortage:
      std::snprintf(line, sizeof line,
                    "cudapool:   why: the program holds %s of the device's %s; no setting of the "
                    "pool frees that: use less memory (smaller batches) or a larger device\n",
                    bytes(s.allocated).c_str(), bytes(s.device_total).c_str());
      break;
    case OomCause::kLargeSegmentSize: {
      const std::uint64_t most = room / (2 * kMiB) * 2;
      const bool default_fits =
          most * kMiB >= kDefaultLargeSegment && s.segment_size != kDefaultLargeSegment;
      std::snprintf(line, sizeof line,
                    "cudapool:   why: a setting: large_segment_size_mb:%llu made the pool ask for "
                    "%s for a block of %s, and %s was free%s. Set large_segment_size_mb to at "
                    "most %llu%s\n",
                    static_cast<unsigned long long>(s.segment_size / kMiB),
                    bytes(s.segment_size).c_str(), bytes(s.rounded).c_str(), bytes(room).c_str(),
                    under_cap, static_cast<unsigned long long>(most),
                    default_fits ? ", or leave it unset (20)" : "");
      break;
    }
    case OomCause::kRoundup: {
      const std::uint64_t d = divisions_that_fit(s.requested, room);
      const std::uint64_t from = std::bit_floor(s.requested);
      std::snprintf(line, sizeof line,
                    "cudapool:   why: a setting: roundup_power2_divisions rounded %s up to a block "
                    "of %s, and %s was free%s, enough for the request itself (%s). Use at least "
                    "%llu divisions for sizes from %s (list entry %llu:%llu), or leave "
                    "roundup_power2_divisions unset\n",
                    bytes(s.requested).c_str(), bytes(s.rounded).c_str(), bytes(room).c_str(),
                    under_cap, bytes(round_up(plain_block(s.requested), kRoundLarge)).c_str(),
                    static_cast<unsigned long long>(d), bytes(from).c_str(),
                    static_cast<unsigned long long>(from / kMiB),
                    static_cast<unsigned long long>(d));
      break;
    }
  }
  out += line;
  return out;
}

}  // namespace cudapool::pool
