// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_rounding.cpp: request rounding (PyTorch round_size with
// roundup_power2_divisions), the small/large pool boundary and the size of new segments
// (get_allocation_size), both as pure functions and as seen through a DevicePool.
#include <cstddef>

#include "pool/rounding.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using cudapool::pool::divisions_for;
using cudapool::pool::round_size;
using cudapool::pool::round_to_power2_division;
using cudapool::pool::segment_size_for;

namespace {

Options divisions_everywhere(std::size_t d) {
  Options o;
  o.roundup_power2_divisions.fill(d);
  return o;
}

}  // namespace

TEST_CASE("pool: round_size rounds below 512 to 512 and otherwise to a multiple of 512") {
  const Options o;
  CHECK(round_size(1, o) == 512);
  CHECK(round_size(511, o) == 512);
  CHECK(round_size(512, o) == 512);
  CHECK(round_size(513, o) == 1024);
  CHECK(round_size(1200, o) == 1536);
  CHECK(round_size(kMiB, o) == kMiB);
  CHECK(round_size(kMiB + 1, o) == kMiB + 512);
  CHECK(round_size(5 * kMiB + 1, o) == 5 * kMiB + 512);
  CHECK(round_size(kGiB + 1, o) == kGiB + 512);
}

TEST_CASE("pool: round_size with divisions rounds to the next of d steps between powers of two") {
  const Options d4 = divisions_everywhere(4);
  // Up to 512 * d the plain 512-byte rounding applies.
  CHECK(round_size(1200, d4) == 1536);
  CHECK(round_size(2048, d4) == 2048);
  CHECK(round_size(1, d4) == 512);
  // Above it: [4096, 8192) has steps of 1024 (plain rounding would give 4608).
  CHECK(round_size(4097, d4) == 5120);
  CHECK(round_size(5120, d4) == 5120);
  CHECK(round_size(5 * kMiB + 1, d4) == 6 * kMiB);
  CHECK(round_size(5 * kMiB, d4) == 5 * kMiB);
  CHECK(round_size(6 * kMiB + 1, d4) == 7 * kMiB);
  CHECK(round_size(7 * kMiB + 1, d4) == 8 * kMiB);
  // A power of two stays itself.
  CHECK(round_size(4 * kMiB, d4) == 4 * kMiB);
  CHECK(round_size(8192, d4) == 8192);
  CHECK(round_size(kGiB, d4) == kGiB);

  const Options d8 = divisions_everywhere(8);
  const auto gib_1_2 = static_cast<std::size_t>(1.2 * static_cast<double>(kGiB));
  CHECK(round_size(gib_1_2, d8) == kGiB + kGiB / 4);  // 1.2 GiB -> 1.25 GiB
  // 512 * 8 = 4096: 4096 itself is plain-rounded, 4097 is in [4096, 8192) with steps of 512.
  CHECK(round_size(4097, d8) == 4608);

  // d = 1 (and 0) mean plain rounding.
  CHECK(round_size(5 * kMiB + 1, divisions_everywhere(1)) == 5 * kMiB + 512);
  CHECK(round_size(5 * kMiB + 1, divisions_everywhere(0)) == 5 * kMiB + 512);

  // The pure step function.
  CHECK(round_to_power2_division(5 * kMiB + 1, 4) == 6 * kMiB);
  CHECK(round_to_power2_division(16 * kMiB, 4) == 16 * kMiB);
  CHECK(round_to_power2_division(17 * kMiB, 2) == 24 * kMiB);
  CHECK(round_to_power2_division(24 * kMiB, 2) == 24 * kMiB);
  CHECK(round_to_power2_division(24 * kMiB + 512, 2) == 32 * kMiB);
}

TEST_CASE("pool: round_size picks the divisions entry of the size's power-of-two interval") {
  Options o;
  // Index = floor(log2(size)) - 20, clamped to [0, 15].
  for (std::size_t i = 0; i < o.roundup_power2_divisions.size(); ++i) {
    o.roundup_power2_divisions[i] = 100 + i;  // distinct markers (divisions_for just looks up)
  }
  CHECK(divisions_for(1, o) == 100);
  CHECK(divisions_for(kMiB - 1, o) == 100);
  CHECK(divisions_for(kMiB, o) == 100);
  CHECK(divisions_for(2 * kMiB - 1, o) == 100);
  CHECK(divisions_for(2 * kMiB, o) == 101);
  CHECK(divisions_for(4 * kMiB - 1, o) == 101);
  CHECK(divisions_for(4 * kMiB, o) == 102);
  CHECK(divisions_for(5 * kMiB + 1, o) == 102);
  CHECK(divisions_for(kGiB, o) == 110);
  CHECK(divisions_for(32 * kGiB, o) == 115);
  CHECK(divisions_for(64 * kGiB, o) == 115);       // log2 = 36: clamped
  CHECK(divisions_for(1024 * kGiB, o) == 115);

  // Only the interval's entry matters for the rounding.
  Options only_4_to_8 = Options{};
  only_4_to_8.roundup_power2_divisions[2] = 4;  // [4 MiB, 8 MiB)
  CHECK(round_size(5 * kMiB + 1, only_4_to_8) == 6 * kMiB);
  CHECK(round_size(3 * kMiB + 1, only_4_to_8) == 3 * kMiB + 512);
  CHECK(round_size(9 * kMiB + 1, only_4_to_8) == 9 * kMiB + 512);
  Options last = Options{};
  last.roundup_power2_divisions[15] = 2;
  CHECK(round_size(64 * kGiB + 1, last) == 96 * kGiB);   // beyond 64 GiB uses the last entry
  CHECK(round_size(40 * kGiB, last) == 48 * kGiB);
  CHECK(round_size(20 * kGiB + 1, last) == 20 * kGiB + 512);
}

TEST_CASE("pool: requests up to 1 MiB rounded use the small pool, larger ones the large pool") {
  Harness h(kGiB);
  const std::uintptr_t a = h.alloc(kMiB);  // rounds to exactly 1 MiB: small
  CHECK(h.block_size(a) == kMiB);
  CHECK(h.cur("allocated_bytes", "small_pool") == static_cast<std::int64_t>(kMiB));
  CHECK(h.cur("allocated_bytes", "large_pool") == 0);
  CHECK(h.cur("segment", "small_pool") == 1);
  CHECK(h.cur("reserved_bytes", "small_pool") == static_cast<std::int64_t>(2 * kMiB));

  const std::uintptr_t b = h.alloc(kMiB + 1);  // rounds to 1 MiB + 512: large
  CHECK(h.block_size(b) == kMiB + 512);
  CHECK(h.cur("allocated_bytes", "small_pool") == static_cast<std::int64_t>(kMiB));
  CHECK(h.cur("allocated_bytes", "large_pool") == static_cast<std::int64_t>(kMiB + 512));
  CHECK(h.cur("segment", "large_pool") == 1);
  CHECK(h.cur("segment", "all") == 2);

  // Rounding decides, not the request: 1 MiB - 100 rounds to 1 MiB (small).
  const std::uintptr_t c = h.alloc(kMiB - 100);
  CHECK(h.block_size(c) == kMiB);
  CHECK(h.segment_of(c) == h.segment_of(a));  // the second half of a's small segment
  CHECK(h.offset_of(c) == kMiB);
  CHECK(h.cur("allocation", "small_pool") == 2);
  CHECK(h.cur("allocation", "large_pool") == 1);
  CHECK(h.cur("requested_bytes", "small_pool") == static_cast<std::int64_t>(2 * kMiB - 100));
}

TEST_CASE("pool: new segments are 2 MiB small, 20 MiB under 10 MiB, else rounded to 2 MiB") {
  const Options o;
  CHECK(segment_size_for(512, o) == 2 * kMiB);
  CHECK(segment_size_for(kMiB, o) == 2 * kMiB);
  CHECK(segment_size_for(kMiB + 512, o) == 20 * kMiB);
  CHECK(segment_size_for(10 * kMiB - 512, o) == 20 * kMiB);
  CHECK(segment_size_for(10 * kMiB, o) == 10 * kMiB);
  CHECK(segment_size_for(10 * kMiB + 512, o) == 12 * kMiB);
  CHECK(segment_size_for(11 * kMiB, o) == 12 * kMiB);
  CHECK(segment_size_for(12 * kMiB, o) == 12 * kMiB);
  Options big = o;
  big.large_segment_size = 32 * kMiB;
  CHECK(segment_size_for(5 * kMiB, big) == 32 * kMiB);
  CHECK(segment_size_for(kMiB, big) == 2 * kMiB);

  struct Case {
    std::size_t request;
    std::size_t segment;
  };
  for (const Case c : {Case{1, 2 * kMiB}, Case{kMiB, 2 * kMiB}, Case{kMiB + 1, 20 * kMiB},
                       Case{10 * kMiB - 512, 20 * kMiB}, Case{10 * kMiB, 10 * kMiB},
                       Case{11 * kMiB + 1, 12 * kMiB}, Case{99 * kMiB, 100 * kMiB}}) {
    INFO("request " << c.request);
    Harness h(kGiB);
    h.alloc(c.request);
    CHECK(h.pool.reserved_bytes() == c.segment);
    CHECK(h.backend.in_use() == c.segment);
    CHECK(h.backend.live_segments() == 1);
    CHECK(h.stats().num_device_alloc == 1);
  }

  Harness h(kGiB, big);
  h.alloc(5 * kMiB);
  CHECK(h.pool.reserved_bytes() == 32 * kMiB);
}
