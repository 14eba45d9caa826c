// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_policy.cpp: how the pool picks, splits and merges blocks (best fit per
// stream, split thresholds, oversize blocks and max_split_size, merging inside a segment only),
// empty_cache, frees of pointers it does not own, and backend errors.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "pool/backend.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using cudapool::pool::BackendResult;
using cudapool::pool::BackendStatus;

namespace {

// A backend whose segments touch: each starts where the previous one ends. SimulatedBackend leaves
// gaps between ranges; this one lets a test see a merge across a segment boundary if there was one.
class AdjacentBackend : public cudapool::pool::Backend {
 public:
  explicit AdjacentBackend(std::size_t memory) : memory_(memory) {}
  std::size_t total_memory() const override { return memory_; }
  BackendResult allocate_segment(std::size_t bytes, std::uintptr_t* ptr) override {
    if (in_use + bytes > memory_) return BackendResult{BackendStatus::kOutOfMemory, 0};
    *ptr = next_;
    next_ += bytes;
    segments[*ptr] = bytes;
    in_use += bytes;
    return BackendResult{};
  }
  void free_segment(std::uintptr_t ptr, std::size_t bytes) override {
    auto it = segments.find(ptr);
    if (it == segments.end() || it->second != bytes) {
      ++misuse;
      return;
    }
    segments.erase(it);
    in_use -= bytes;
    ++frees;
  }
  BackendResult reserve_address_space(std::size_t, std::uintptr_t*) override {
    return BackendResult{BackendStatus::kError, 1};
  }
  void release_address_space(std::uintptr_t, std::size_t) override { ++misuse; }
  BackendResult map_pages(std::uintptr_t, std::size_t, std::size_t) override {
    return BackendResult{BackendStatus::kError, 1};
  }
  void unmap_pages(std::uintptr_t, std::size_t, std::size_t) override { ++misuse; }

  std::map<std::uintptr_t, std::size_t> segments;
  std::size_t in_use = 0;
  int misuse = 0;
  int frees = 0;

 private:
  std::size_t memory_;
  std::uintptr_t next_ = 0x100000000000;
};

}  // namespace

TEST_CASE("pool: best fit takes the smallest cached block that is large enough") {
  Harness h(kGiB);
  const std::uintptr_t b16 = h.alloc(16 * kMiB);  // lowest address
  const std::uintptr_t b14 = h.alloc(14 * kMiB);
  const std::uintptr_t b12 = h.alloc(12 * kMiB);
  REQUIRE(b16 < b14);
  REQUIRE(b14 < b12);
  h.free(b16);
  h.free(b12);
  h.free(b14);
  CHECK(h.pool.reserved_bytes() == 42 * kMiB);

  const AllocResult r = h.try_alloc(13 * kMiB);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK(r.cache_hit);
  CHECK(r.ptr == b14);
  CHECK(r.block_size == 14 * kMiB);  // remainder 1 MiB: not split off
  CHECK(h.pool.reserved_bytes() == 42 * kMiB);
  CHECK(h.stats().num_device_alloc == 3);

  const AllocResult r12 = h.try_alloc(11 * kMiB + 1);
  CHECK(r12.ptr == b12);
  CHECK(r12.block_size == 12 * kMiB);
  const AllocResult r16 = h.try_alloc(12 * kMiB + 1);
  CHECK(r16.ptr == b16);
  // 12 MiB + 512 out of 16 MiB: the 4 MiB - 512 remainder is split off (> 1 MiB).
  CHECK(r16.block_size == 12 * kMiB + 512);
  CHECK(h.cur("inactive_split_bytes", "large_pool") ==
        static_cast<std::int64_t>(4 * kMiB - 512));
}

TEST_CASE("pool: best fit breaks ties between equal sizes by the lowest address") {
  Harness h(kGiB);
  const std::uintptr_t p1 = h.alloc(12 * kMiB);
  const std::uintptr_t p2 = h.alloc(12 * kMiB);
  const std::uintptr_t p3 = h.alloc(12 * kMiB);
  REQUIRE(p1 < p2);
  REQUIRE(p2 < p3);
  h.free(p3);
  h.free(p1);
  h.free(p2);
  CHECK(h.alloc(12 * kMiB) == p1);
  CHECK(h.alloc(12 * kMiB) == p2);
  CHECK(h.alloc(12 * kMiB) == p3);
  CHECK(h.stats().num_device_alloc == 3);
}

TEST_CASE("pool: best fit inside a small segment picks the tightest free block") {
  Harness h(kGiB);
  const std::uintptr_t a = h.alloc(4096);
  const std::uintptr_t b = h.alloc(512);
  const std::uintptr_t c = h.alloc(8192);
  const std::uintptr_t d = h.alloc(512);
  const std::uintptr_t e = h.alloc(2048);
  const std::uintptr_t f = h.alloc(512);
  const std::uintptr_t base = h.segment_of(a);
  CHECK(h.offset_of(a) == 0);
  CHECK(b - base == 4096);
  CHECK(c - base == 4608);
  CHECK(d - base == 12800);
  CHECK(e - base == 13312);
  CHECK(f - base == 15360);
  h.free(a);
  h.free(c);
  h.free(e);
  CHECK(h.idle_blocks() == 4);  // a, c, e and the tail at 15872

  const AllocResult exact = h.try_alloc(2000);  // 2048: e exactly
  CHECK(exact.ptr == e);
  CHECK(exact.block_size == 2048);
  const AllocResult r3k = h.try_alloc(3000);  // 3072: a (4096) is tighter than c (8192)
  CHECK(r3k.ptr == a);
  CHECK(r3k.block_size == 3072);
  const AllocResult r1k = h.try_alloc(1024);  // the 1024 left of a
  CHECK(r1k.ptr - base == 3072);
  CHECK(r1k.block_size == 1024);
  const AllocResult r5k = h.try_alloc(5000);  // 5120 out of c
  CHECK(r5k.ptr == c);
  CHECK(h.stats().num_device_alloc == 1);
}

TEST_CASE("pool: blocks freed on one stream are not reused for another stream") {
  Harness h(kGiB);
  const std::uintptr_t large1 = h.alloc(12 * kMiB, /*stream=*/1);
  const std::uintptr_t small1 = h.alloc(512, 1);
  h.free(large1);
  h.free(small1);
  CHECK(h.pool.reserved_bytes() == 14 * kMiB);

  const AllocResult large2 = h.try_alloc(12 * kMiB, 2);
  CHECK_FALSE(large2.cache_hit);
  CHECK(large2.ptr != large1);
  const AllocResult small2 = h.try_alloc(512, 2);
  CHECK_FALSE(small2.cache_hit);
  CHECK(h.segment_of(small2.ptr) != small1);
  CHECK(h.pool.reserved_bytes() == 28 * kMiB);
  CHECK(h.stats().num_device_alloc == 4);

  const AllocResult again = h.try_alloc(12 * kMiB, 1);
  CHECK(again.cache_hit);
  CHECK(again.ptr == large1);
  const AllocResult small_again = h.try_alloc(512, 1);
  CHECK(small_again.cache_hit);
  CHECK(small_again.ptr == small1);
  CHECK(h.stats().num_device_alloc == 4);
}

TEST_CASE("pool: the small pool splits off any remainder of at least 512 bytes") {
  Harness h(kGiB);
  const std::uintptr_t a = h.alloc(512);
  CHECK(h.block_size(a) == 512);
  CHECK(h.cur("inactive_split", "small_pool") == 1);
  CHECK(h.cur("inactive_split_bytes", "small_pool") == static_cast<std::int64_t>(2 * kMiB - 512));
  CHECK(h.idle_blocks() == 1);

  const std::uintptr_t b = h.alloc(kMiB);  // from the remainder: 1 MiB - 512 left
  CHECK(b - h.segment_of(a) == 512);
  CHECK(h.block_size(b) == kMiB);
  const std::uintptr_t c = h.alloc(kMiB - 1024);  // 512 left: still split off
  CHECK(h.block_size(c) == kMiB - 1024);
  CHECK(h.cur("inactive_split_bytes", "small_pool") == 512);
  CHECK(h.cur("inactive_split", "small_pool") == 1);
  const std::uintptr_t d = h.alloc(1);  // the last 512 bytes, nothing left to split
  CHECK(d - h.segment_of(a) == 2 * kMiB - 512);
  CHECK(h.block_size(d) == 512);
  CHECK(h.cur("inactive_split", "small_pool") == 0);
  CHECK(h.idle_blocks() == 0);
  CHECK(h.stats().num_device_alloc == 1);
}

TEST_CASE("pool: the large pool splits only below max_split_size with a remainder above 1 MiB") {
  SECTION("remainder of exactly 1 MiB stays with the block") {
    Harness h(kGiB);
    const std::uintptr_t a = h.alloc(19 * kMiB);  // segment 20 MiB
    CHECK(h.block_size(a) == 20 * kMiB);
    CHECK(h.idle_blocks() == 0);
    CHECK(h.cur("inactive_split", "large_pool") == 0);
    CHECK(h.cur("allocated_bytes", "large_pool") == static_cast<std::int64_t>(20 * kMiB));
    CHECK(h.cur("requested_bytes", "large_pool") == static_cast<std::int64_t>(19 * kMiB));
  }
  SECTION("remainder of 1 MiB + 512 is split off") {
    Harness h(kGiB);
    const std::uintptr_t a = h.alloc(19 * kMiB - 512);
    CHECK(h.block_size(a) == 19 * kMiB - 512);
    CHECK(h.idle_blocks() == 1);
    CHECK(h.cur("inactive_split_bytes", "large_pool") == static_cast<std::int64_t>(kMiB + 512));
  }
  SECTION("a 1 MiB + 512 request takes 1 MiB + 512 out of a 20 MiB segment") {
    Harness h(kGiB);
    const std::uintptr_t a = h.alloc(kMiB + 1);
    CHECK(h.block_size(a) == kMiB + 512);
    CHECK(h.cur("inactive_split_bytes", "large_pool") ==
          static_cast<std::int64_t>(19 * kMiB - 512));
    // A cached large block with 1 MiB to spare is handed out whole.
    const std::uintptr_t b = h.alloc(18 * kMiB - 512);
    CHECK(h.block_size(b) == 19 * kMiB - 512);
    CHECK(h.cur("inactive_split", "large_pool") == 0);
  }
  SECTION("requests at or above max_split_size are never split") {
    Harness unlimited(kGiB);
    const std::uintptr_t u = unlimited.alloc(38 * kMiB + 512);  // segment 40 MiB
    CHECK(unlimited.block_size(u) == 38 * kMiB + 512);

    Harness h(kGiB, with_max_split(32 * kMiB));
    const std::uintptr_t a = h.alloc(38 * kMiB + 512);
    CHECK(h.block_size(a) == 40 * kMiB);
    CHECK(h.idle_blocks() == 0);
    CHECK(h.stats().oversize_allocations.current == 1);
    CHECK(h.stats().oversize_segments.current == 1);
    // Below max_split_size the usual rule holds, even in a segment of max_split_size.
    const std::uintptr_t b = h.alloc(30 * kMiB + 512);  // segment 32 MiB
    CHECK(h.block_size(b) == 30 * kMiB + 512);
    CHECK(h.idle_blocks() == 1);
    CHECK(h.stats().oversize_allocations.current == 1);
    CHECK(h.stats().oversize_segments.current == 2);
  }
}

TEST_CASE("pool: a request below max_split_size never takes an oversize block") {
  Harness h(kGiB, with_max_split(32 * kMiB));
  const std::uintptr_t big = h.alloc(40 * kMiB);
  h.free(big);
  const AllocResult r = h.try_alloc(8 * kMiB);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK_FALSE(r.cache_hit);
  CHECK(h.segment_of(r.ptr) != big);
  CHECK(h.pool.reserved_bytes() == 60 * kMiB);
  const AllocResult r31 = h.try_alloc(31 * kMiB);
  CHECK_FALSE(r31.cache_hit);
  CHECK(r31.ptr != big);
  CHECK(h.pool.reserved_bytes() == 92 * kMiB);
  // Idle: the 40 MiB block and the 12 MiB left of the 20 MiB segment; the 31 MiB request took all
  // of its 32 MiB segment (1 MiB remainder).
  CHECK(h.pool.idle_cached_bytes() == 52 * kMiB);

  // Without max_split_size the same 8 MiB request is cut out of the cached 40 MiB block.
  Harness u(kGiB);
  const std::uintptr_t ubig = u.alloc(40 * kMiB);
  u.free(ubig);
  const AllocResult ur = u.try_alloc(8 * kMiB);
  CHECK(ur.cache_hit);
  CHECK(ur.ptr == ubig);
  CHECK(ur.block_size == 8 * kMiB);
}

TEST_CASE("pool: a split piece of a large segment at or above max_split_size is never released") {
  // large_segment_size above max_split_size: a 5 MiB request splits a 32 MiB segment and leaves a
  // free piece of 27 MiB, "oversize" by its size. An oversize request that finds no room frees
  // oversize cached blocks first: only whole segments may go, never such a piece (it freed the
  // piece as a segment and left the blocks beside it pointing at it: a crash).
  Options o = with_max_split(22 * kMiB);
  o.large_segment_size = 32 * kMiB;
  o.max_non_split_rounding = 1 * kMiB;  // the whole segment is too large to serve 30 MiB as it is
  Harness h(40 * kMiB, o);
  const std::uintptr_t small = h.alloc(5 * kMiB);
  CHECK(h.pool.reserved_bytes() == 32 * kMiB);
  const AllocResult r = h.try_alloc(30 * kMiB);  // no room beside the 32 MiB segment
  CHECK(r.status == AllocStatus::kOutOfMemory);
  CHECK(h.backend.misuse() == 0);
  CHECK(h.pool.reserved_bytes() == 32 * kMiB);
  h.free(small);
  // The segment is whole again: now it goes back, and the request gets a segment of its own.
  const AllocResult again = h.try_alloc(30 * kMiB);
  CHECK(again.status == AllocStatus::kOk);
  CHECK_FALSE(again.cache_hit);
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);
}

TEST_CASE("pool: an oversize request takes a cached block only within max_non_split_rounding") {
  SECTION("a block of request + 20 MiB is too large") {
    Harness h(kGiB, with_max_split(32 * kMiB));
    const std::uintptr_t big = h.alloc(60 * kMiB);
    h.free(big);
    const AllocResult r = h.try_alloc(40 * kMiB);
    CHECK_FALSE(r.cache_hit);
    CHECK(r.ptr != big);
    CHECK(r.block_size == 40 * kMiB);
    CHECK(h.pool.reserved_bytes() == 100 * kMiB);
  }
  SECTION("a block below request + 20 MiB is taken whole, not split") {
    Harness h(kGiB, with_max_split(32 * kMiB));
    const std::uintptr_t big = h.alloc(58 * kMiB);
    h.free(big);
    const AllocResult r = h.try_alloc(40 * kMiB);
    CHECK(r.cache_hit);
    CHECK(r.ptr == big);
    CHECK(r.block_size == 58 * kMiB);
    CHECK(h.idle_blocks() == 0);
    CHECK(h.stats().oversize_allocations.current == 1);
    CHECK(h.cur("allocated_bytes", "all") == static_cast<std::int64_t>(58 * kMiB));
    CHECK(h.cur("requested_bytes", "all") == static_cast<std::int64_t>(40 * kMiB));
    CHECK(h.pool.reserved_bytes() == 58 * kMiB);
  }
  SECTION("max_non_split_rounding is a setting") {
    Options o = with_max_split(32 * kMiB);
    o.max_non_split_rounding = 4 * kMiB;
    Harness h(kGiB, o);
    const std::uintptr_t b44 = h.alloc(44 * kMiB);
    const std::uintptr_t b42 = h.alloc(42 * kMiB);
    h.free(b44);
    const AllocResult miss = h.try_alloc(40 * kMiB);  // 44 >= 40 + 4
    CHECK_FALSE(miss.cache_hit);
    h.free(b42);
    const AllocResult hit = h.try_alloc(40 * kMiB);  // 42 < 44: best fit is 42
    CHECK(hit.cache_hit);
    CHECK(hit.ptr == b42);
    CHECK(hit.block_size == 42 * kMiB);
  }
}

TEST_CASE("pool: a freed block merges with its idle neighbours in the segment") {
  SECTION("small pool") {
    Harness h(kGiB);
    const std::uintptr_t a = h.alloc(512);
    const std::uintptr_t b = h.alloc(512);
    const std::uintptr_t c = h.alloc(512);
    const std::uintptr_t seg = h.segment_of(a);
    CHECK(h.blocks_in_segment(seg) == 4);
    h.free(a);
    CHECK(h.blocks_in_segment(seg) == 4);  // b is allocated: no neighbour to merge with
    CHECK(h.cur("inactive_split", "small_pool") == 2);
    h.free(c);  // merges with the tail
    CHECK(h.blocks_in_segment(seg) == 3);
    CHECK(h.cur("inactive_split", "small_pool") == 2);
    CHECK(h.cur("inactive_split_bytes", "small_pool") == static_cast<std::int64_t>(2 * kMiB - 512));
    h.free(b);  // merges with both: the segment is one block again
    CHECK(h.blocks_in_segment(seg) == 1);
    CHECK(h.cur("inactive_split", "small_pool") == 0);
    CHECK(h.cur("inactive_split_bytes", "small_pool") == 0);
    const AllocResult whole = h.try_alloc(kMiB);
    CHECK(whole.ptr == seg);
    h.free(whole.ptr);
    h.empty_cache();
    CHECK(h.pool.reserved_bytes() == 0);
    CHECK(h.backend.live_segments() == 0);
  }
  SECTION("large pool") {
    Harness h(kGiB);
    const std::uintptr_t a = h.alloc(5 * kMiB);
    const std::uintptr_t b = h.alloc(5 * kMiB);
    const std::uintptr_t seg = h.segment_of(a);
    CHECK(b - seg == 5 * kMiB);
    CHECK(h.blocks_in_segment(seg) == 3);
    h.free(b);  // merges with the 10 MiB tail
    CHECK(h.blocks_in_segment(seg) == 2);
    CHECK(h.cur("inactive_split_bytes", "large_pool") == static_cast<std::int64_t>(15 * kMiB));
    h.free(a);
    CHECK(h.blocks_in_segment(seg) == 1);
    CHECK(h.cur("inactive_split", "large_pool") == 0);
    const AllocResult whole = h.try_alloc(20 * kMiB);
    CHECK(whole.cache_hit);
    CHECK(whole.ptr == seg);
    CHECK(whole.block_size == 20 * kMiB);
  }
}

TEST_CASE("pool: blocks never merge across segments, even when the segments touch") {
  AdjacentBackend backend(kGiB);
  DevicePool pool(Options{}, backend);
  auto check = [&] {
    require_invariants(pool);
    REQUIRE(backend.misuse == 0);
  };
  auto alloc = [&](std::size_t size) {
    const AllocResult r = pool.malloc(size);
    check();
    REQUIRE(r.status == AllocStatus::kOk);
    return r.ptr;
  };
  auto free = [&](std::uintptr_t p) {
    REQUIRE(pool.free(p) == FreeStatus::kOk);
    check();
  };
  const std::uintptr_t x1 = alloc(kMiB);
  const std::uintptr_t x2 = alloc(kMiB);
  const std::uintptr_t y1 = alloc(kMiB);
  const std::uintptr_t y2 = alloc(kMiB);
  REQUIRE(backend.segments.size() == 2);
  REQUIRE(x2 + kMiB == y1);  // the segments touch
  free(x2);
  free(y1);
  std::vector<std::size_t> idle;
  pool.for_each_block([&](const Block& b) {
    if (!b.allocated) idle.push_back(b.size);
  });
  CHECK(idle == std::vector<std::size_t>{kMiB, kMiB});
  free(x1);
  free(y2);
  std::vector<std::pair<std::uintptr_t, std::size_t>> blocks;
  pool.for_each_block([&](const Block& b) { blocks.emplace_back(b.ptr, b.size); });
  std::sort(blocks.begin(), blocks.end());
  CHECK(blocks == std::vector<std::pair<std::uintptr_t, std::size_t>>{{x1, 2 * kMiB},
                                                                     {y1, 2 * kMiB}});
  pool.empty_cache();
  check();
  CHECK(backend.frees == 2);
  CHECK(backend.in_use == 0);
}

TEST_CASE("pool: empty_cache frees every idle unsplit segment and nothing in use") {
  Harness h(kGiB);
  const std::uintptr_t small_live = h.alloc(512);             // small segment, split
  const std::uintptr_t large_live = h.alloc(12 * kMiB);       // 12 MiB segment, in use
  const std::uintptr_t large_idle = h.alloc(14 * kMiB);       // 14 MiB segment, freed below
  const std::uintptr_t part_live = h.alloc(5 * kMiB);         // 20 MiB segment, split
  const std::uintptr_t small_idle = h.alloc(600 * kKiB, 1);   // small segment of stream 1
  h.free(large_idle);
  h.free(small_idle);
  CHECK(h.pool.reserved_bytes() == 50 * kMiB);
  const auto allocated_before = h.cur("allocated_bytes", "all");

  h.empty_cache();
  CHECK(h.pool.reserved_bytes() == 34 * kMiB);
  CHECK(h.backend.in_use() == 34 * kMiB);
  CHECK(h.backend.live_segments() == 3);
  CHECK(h.stats().num_device_free == 2);
  CHECK(h.stats().num_sync_all_streams == 1);
  CHECK(h.cur("allocated_bytes", "all") == allocated_before);
  CHECK(h.cur("segment", "all") == 3);
  CHECK(h.block_size(small_live) == 512);
  CHECK(h.block_size(large_live) == 12 * kMiB);
  CHECK(h.block_size(part_live) == 5 * kMiB);

  h.empty_cache();  // nothing more to free
  CHECK(h.stats().num_device_free == 2);
  CHECK(h.stats().num_sync_all_streams == 2);

  h.free(small_live);
  h.free(large_live);
  h.free(part_live);
  h.empty_cache();
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.backend.in_use() == 0);
  CHECK(h.backend.live_segments() == 0);
  CHECK(h.stats().num_device_free == 5);
}

TEST_CASE("pool: freeing an unknown, interior or already freed pointer changes nothing") {
  Harness h(kGiB);
  const std::uintptr_t a = h.alloc(4096);
  const std::uintptr_t big = h.alloc(12 * kMiB);
  const auto before = stat_map(h.pool);
  const std::uintptr_t tail = a + 4096;  // start of the cached remainder: not allocated

  for (const std::uintptr_t bad : {std::uintptr_t{0}, a + 512, a + 1, big + 2 * kMiB, tail,
                                   std::uintptr_t{0xdead0000}, big + 12 * kMiB}) {
    INFO("ptr " << bad);
    CHECK(h.pool.free(bad) == FreeStatus::kNotOwned);
    h.check();
    CHECK(stat_map(h.pool) == before);
  }
  CHECK(h.block_size(a) == 4096);

  h.free(a);
  const auto after_free = stat_map(h.pool);
  CHECK(h.pool.free(a) == FreeStatus::kNotOwned);  // double free
  h.check();
  CHECK(stat_map(h.pool) == after_free);

  // A double free while the first free waits on its reuse fence.
  h.backend.set_fences(true);
  h.free(big);
  const auto pending = stat_map(h.pool);
  CHECK(h.pool.free(big) == FreeStatus::kNotOwned);
  h.check();
  CHECK(stat_map(h.pool) == pending);
  CHECK(h.backend.live_fences() == 1);
}

TEST_CASE("pool: backend errors other than out-of-memory are returned without retries") {
  SECTION("segment allocation") {
    Harness h(kGiB);
    const std::uintptr_t idle = h.alloc(12 * kMiB);
    h.free(idle);
    h.backend.fail_next_allocations(1, BackendStatus::kError, 42);
    const AllocResult r = h.try_alloc(14 * kMiB);
    CHECK(r.status == AllocStatus::kBackendError);
    CHECK(r.backend_error == 42);
    CHECK(r.ptr == 0);
    CHECK(h.stats().num_alloc_retries == 0);
    CHECK(h.stats().num_ooms == 0);
    CHECK(h.stats().num_sync_all_streams == 0);
    CHECK(h.stats().num_device_free == 0);  // the cached segment was not given back
    CHECK(h.pool.reserved_bytes() == 12 * kMiB);
    CHECK(h.alloc(14 * kMiB) != 0);  // the next try goes through
  }
  SECTION("with max_split_size set, oversize blocks stay cached") {
    Harness h(kGiB, with_max_split(32 * kMiB));
    const std::uintptr_t big = h.alloc(40 * kMiB);
    h.free(big);
    h.backend.fail_next_allocations(1, BackendStatus::kError, 7);
    const AllocResult r = h.try_alloc(100 * kMiB);
    CHECK(r.status == AllocStatus::kBackendError);
    CHECK(r.backend_error == 7);
    CHECK(h.stats().num_device_free == 0);
    CHECK(h.pool.reserved_bytes() == 40 * kMiB);
  }
  SECTION("page mapping of an expandable segment") {
    Harness h(kGiB, expandable());
    h.backend.fail_next_allocations(1, BackendStatus::kError, 9);
    const AllocResult r = h.try_alloc(5 * kMiB);
    CHECK(r.status == AllocStatus::kBackendError);
    CHECK(r.backend_error == 9);
    CHECK(h.stats().num_alloc_retries == 0);
    CHECK(h.stats().num_ooms == 0);
    CHECK(h.pool.reserved_bytes() == 0);
    CHECK(h.alloc(5 * kMiB) != 0);
  }
  SECTION("a forced out-of-memory is retried after freeing the cache") {
    Harness h(kGiB);
    const std::uintptr_t idle = h.alloc(12 * kMiB);
    h.free(idle);
    h.backend.fail_next_allocations(1, BackendStatus::kOutOfMemory);
    const AllocResult r = h.try_alloc(14 * kMiB);
    CHECK(r.status == AllocStatus::kOk);
    CHECK(h.stats().num_alloc_retries == 1);
    CHECK(h.stats().num_device_free == 1);
    CHECK(h.stats().num_ooms == 0);
    CHECK(h.pool.reserved_bytes() == 14 * kMiB);
  }
}
