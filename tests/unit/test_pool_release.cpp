// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_release.cpp: what the pool does when a request misses the cache and the
// device is short of memory: the order of attempts (new segment, oversize blocks, every idle
// segment, out-of-memory), garbage collection by age, the memory-fraction cap, and reuse fences.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using Names = std::vector<std::string>;

TEST_CASE(
    "pool: on a miss a new segment comes first, then every idle segment is freed and retried") {
  EventLog log;
  Harness h(64 * kMiB, Options{}, &log);
  const std::uintptr_t a = h.alloc(30 * kMiB);
  h.alloc(30 * kMiB);
  h.free(a);
  CHECK(h.pool.reserved_bytes() == 60 * kMiB);
  log.events.clear();

  const AllocResult r = h.try_alloc(32 * kMiB);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK_FALSE(r.cache_hit);
  CHECK(r.block_size == 32 * kMiB);
  // The device refused the new segment first (logged, so a replay refuses it at the same point).
  CHECK(log.names() == Names{"segment_refused", "segment_free", "segment_alloc", "alloc"});
  CHECK(log.events[0].size == 32 * kMiB);
  CHECK(log.events[1].ptr == a);
  CHECK(h.stats().num_alloc_retries == 1);
  CHECK(h.stats().num_sync_all_streams == 1);
  CHECK(h.stats().num_device_free == 1);
  CHECK(h.stats().num_ooms == 0);
  CHECK(h.pool.reserved_bytes() == 62 * kMiB);
}

TEST_CASE("pool: with max_split_size set, oversize blocks are freed from the largest down first") {
  EventLog log;
  Harness h(120 * kMiB, with_max_split(24 * kMiB), &log);
  const std::uintptr_t live = h.alloc(26 * kMiB);
  const std::uintptr_t c30 = h.alloc(30 * kMiB);
  const std::uintptr_t c40 = h.alloc(40 * kMiB);
  const std::uintptr_t c20 = h.alloc(5 * kMiB);  // a 20 MiB segment, below max_split_size
  h.free(c30);
  h.free(c40);
  h.free(c20);
  CHECK(h.pool.reserved_bytes() == 116 * kMiB);
  CHECK(h.stats().oversize_segments.current == 3);
  log.events.clear();

  const AllocResult r = h.try_alloc(50 * kMiB);
  REQUIRE(r.status == AllocStatus::kOk);
  // 40 MiB is not enough alone; 40 + 30 is.
  CHECK(log.names() ==
        Names{"segment_refused", "segment_free", "segment_free", "segment_alloc", "alloc"});
  CHECK(log.events[1].ptr == c40);
  CHECK(log.events[2].ptr == c30);
  CHECK(h.stats().num_alloc_retries == 0);
  CHECK(h.stats().num_sync_all_streams == 0);
  CHECK(h.stats().num_device_free == 2);
  CHECK(h.pool.reserved_bytes() == 96 * kMiB);
  CHECK(h.pool.idle_cached_bytes() == 20 * kMiB);  // the 20 MiB segment was left alone
  CHECK(h.block_size(live) == 26 * kMiB);
  CHECK(h.stats().oversize_segments.current == 2);
}

TEST_CASE("pool: with max_split_size set, one oversize block large enough is freed alone") {
  EventLog log;
  Harness h(160 * kMiB, with_max_split(24 * kMiB), &log);
  h.alloc(26 * kMiB);
  const std::uintptr_t c80 = h.alloc(80 * kMiB);
  const std::uintptr_t c30 = h.alloc(30 * kMiB);
  h.free(c80);
  h.free(c30);
  log.events.clear();
  // 80 MiB is too large to serve 50 MiB (>= 50 + 20) but large enough to free for it.
  const AllocResult r = h.try_alloc(50 * kMiB);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK_FALSE(r.cache_hit);
  CHECK(log.names() == Names{"segment_refused", "segment_free", "segment_alloc", "alloc"});
  CHECK(log.events[1].ptr == c80);
  CHECK(h.stats().num_alloc_retries == 0);
  CHECK(h.pool.reserved_bytes() == 106 * kMiB);
  CHECK(h.pool.idle_cached_bytes() == 30 * kMiB);

  SECTION("a request below max_split_size frees an oversize block too") {
    Harness s(64 * kMiB, with_max_split(24 * kMiB));
    const std::uintptr_t big = s.alloc(40 * kMiB);
    s.free(big);
    s.alloc(12 * kMiB);
    const AllocResult r14 = s.try_alloc(14 * kMiB);  // 52 + 14 > 64: the 40 MiB block goes
    REQUIRE(r14.status == AllocStatus::kOk);
    CHECK(s.stats().num_device_free == 1);
    CHECK(s.stats().num_alloc_retries == 0);
    CHECK(s.pool.reserved_bytes() == 26 * kMiB);
  }
}

TEST_CASE("pool: when oversize blocks are not enough, every idle segment is freed and retried") {
  Harness h(100 * kMiB, with_max_split(24 * kMiB));
  h.alloc(26 * kMiB);
  const std::uintptr_t c30 = h.alloc(30 * kMiB);
  const std::uintptr_t c20 = h.alloc(5 * kMiB);
  h.free(c30);
  h.free(c20);
  const AllocResult r = h.try_alloc(50 * kMiB);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK(h.stats().num_device_free == 2);
  CHECK(h.stats().num_alloc_retries == 1);
  CHECK(h.stats().num_sync_all_streams == 1);
  CHECK(h.pool.reserved_bytes() == 76 * kMiB);
}

TEST_CASE("pool: out of memory after every attempt fails and leaves allocations alone") {
  EventLog log;
  Harness h(64 * kMiB, Options{}, &log);
  const std::uintptr_t a = h.alloc(40 * kMiB);
  const std::uintptr_t b = h.alloc(12 * kMiB);
  h.free(b);
  const auto allocated = h.cur("allocated_bytes", "all");
  log.events.clear();

  const AllocResult r = h.try_alloc(30 * kMiB);
  CHECK(r.status == AllocStatus::kOutOfMemory);
  CHECK(r.ptr == 0);
  CHECK(log.names() == Names{"segment_refused", "segment_free", "segment_refused", "oom"});
  CHECK(log.events[3].size == 30 * kMiB);
  CHECK(h.stats().num_ooms == 1);
  CHECK(h.stats().num_alloc_retries == 1);
  CHECK(h.stats().num_sync_all_streams == 1);
  CHECK(h.pool.reserved_bytes() == 40 * kMiB);
  CHECK(h.block_size(a) == 40 * kMiB);
  CHECK(h.cur("allocated_bytes", "all") == allocated);

  // An absurd size is refused without touching anything.
  const AllocResult huge = h.try_alloc(std::numeric_limits<std::size_t>::max());
  CHECK(huge.status == AllocStatus::kOutOfMemory);
  CHECK(h.stats().num_ooms == 2);
  const AllocResult too_big = h.try_alloc(std::size_t{1} << 50);
  CHECK(too_big.status == AllocStatus::kOutOfMemory);
  CHECK(h.stats().num_ooms == 3);

  CHECK(h.alloc(20 * kMiB) != 0);
  h.free(a);
}

namespace {

// Three idle 10 MiB segments of different ages on stream 1 (a oldest, c youngest), one 12 MiB
// block in use, all counted in cache lookups of the large pool. Returns {a, b, c}.
std::vector<std::uintptr_t> age_three_segments(Harness& h) {
  const std::uintptr_t a = h.alloc(10 * kMiB, 1);  // lookup 1
  const std::uintptr_t b = h.alloc(10 * kMiB, 1);  // 2
  const std::uintptr_t c = h.alloc(10 * kMiB, 1);  // 3
  std::uintptr_t d = h.alloc(12 * kMiB, 1);        // 4
  h.free(a);                                       // cached at 4
  h.free(d);
  d = h.alloc(12 * kMiB, 1);  // 5: a hit on d
  h.free(b);                  // cached at 5
  h.free(d);
  d = h.alloc(12 * kMiB, 1);  // 6
  h.free(c);                  // cached at 6
  h.free(d);
  d = h.alloc(12 * kMiB, 1);  // 7
  CHECK(h.stats().num_device_alloc == 4);
  CHECK(h.stats().num_device_free == 0);
  CHECK(h.pool.reserved_bytes() == 42 * kMiB);
  return {a, b, c};
}

Options gc_options(double threshold, double fraction = 0.5) {
  Options o;
  o.per_process_memory_fraction = fraction;
  o.garbage_collection_threshold = threshold;
  return o;
}

}  // namespace

TEST_CASE("pool: garbage collection frees idle segments at least as old as the average") {
  // 200 MiB device, fraction 0.5: 100 MiB allowed. Threshold 0.25: collect above 25 MiB.
  EventLog log;
  Harness h(200 * kMiB, gc_options(0.25), &log);
  const auto abc = age_three_segments(h);
  log.events.clear();
  // Lookup 8 misses: reserved 42 > 25, so 17 MiB are to be reclaimed. Ages a=4, b=3, c=2, average
  // 3: a and b go in one pass (20 MiB >= 17), c stays.
  const AllocResult r = h.try_alloc(10 * kMiB, 2);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK(log.names() == Names{"segment_free", "segment_free", "segment_alloc", "alloc"});
  CHECK(log.events[0].ptr == abc[0]);
  CHECK(log.events[1].ptr == abc[1]);
  CHECK(h.stats().num_device_free == 2);
  CHECK(h.stats().num_alloc_retries == 0);
  CHECK(h.stats().num_sync_all_streams == 0);
  CHECK(h.pool.reserved_bytes() == 32 * kMiB);
  CHECK(h.pool.idle_cached_bytes() == 10 * kMiB);
  const AllocResult c_again = h.try_alloc(10 * kMiB, 1);
  CHECK(c_again.cache_hit);
  CHECK(c_again.ptr == abc[2]);
}

TEST_CASE("pool: garbage collection repeats with a new average until enough is reclaimed") {
  // Threshold 0.2: 20 MiB, so 22 MiB are to be reclaimed: a and b first (20 MiB), then c, now the
  // only one left and so at the average age.
  EventLog log;
  Harness h(200 * kMiB, gc_options(0.2), &log);
  const auto abc = age_three_segments(h);
  log.events.clear();
  const AllocResult r = h.try_alloc(10 * kMiB, 2);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK(log.names() ==
        Names{"segment_free", "segment_free", "segment_free", "segment_alloc", "alloc"});
  CHECK(log.events[2].ptr == abc[2]);
  CHECK(h.stats().num_device_free == 3);
  CHECK(h.pool.reserved_bytes() == 22 * kMiB);
  CHECK(h.pool.idle_cached_bytes() == 0);
}

TEST_CASE("pool: garbage collection needs both a memory fraction below 1 and a threshold") {
  for (const Options& o : {gc_options(0.25, 1.0), gc_options(0.0, 0.5)}) {
    Harness h(200 * kMiB, o);
    age_three_segments(h);
    const AllocResult r = h.try_alloc(10 * kMiB, 2);
    REQUIRE(r.status == AllocStatus::kOk);
    CHECK(h.stats().num_device_free == 0);
    CHECK(h.pool.reserved_bytes() == 52 * kMiB);
  }
}

TEST_CASE("pool: garbage collection never frees split segments or small-pool segments") {
  Harness h(200 * kMiB, gc_options(0.1));  // collect above 10 MiB
  const std::uintptr_t s = h.alloc(512);
  h.free(s);                                        // an idle whole small segment
  h.alloc(5 * kMiB);                                // a 20 MiB segment, split (15 MiB idle)
  const AllocResult r = h.try_alloc(12 * kMiB, 2);  // a miss with 22 MiB reserved
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK(h.stats().num_device_free == 0);
  CHECK(h.pool.reserved_bytes() == 34 * kMiB);
}

TEST_CASE("pool: a memory fraction below 1 caps reserved memory like out-of-memory") {
  SECTION("allowed memory is fraction * total, truncated") {
    Harness h(100 * kMiB, gc_options(0.0, 1.0 / 3.0));
    const auto expected = static_cast<std::size_t>(1.0 / 3.0 * static_cast<double>(100 * kMiB));
    REQUIRE(h.pool.allowed_memory().has_value());
    CHECK(*h.pool.allowed_memory() == expected);
    CHECK(*h.pool.allowed_memory() == 34952533);
    h.pool.set_memory_fraction(1.0);
    CHECK_FALSE(h.pool.allowed_memory().has_value());
    h.pool.set_memory_fraction(0.25);
    CHECK(*h.pool.allowed_memory() == 25 * kMiB);
    Harness unlimited(100 * kMiB);
    CHECK_FALSE(unlimited.pool.allowed_memory().has_value());
  }
  SECTION("a segment past the cap fails even though the device has room") {
    Harness h(100 * kMiB, gc_options(0.0, 0.5));
    const std::uintptr_t a = h.alloc(40 * kMiB);
    const AllocResult r = h.try_alloc(12 * kMiB);  // 40 + 12 > 50
    CHECK(r.status == AllocStatus::kOutOfMemory);
    CHECK(h.stats().num_alloc_retries == 1);
    CHECK(h.stats().num_ooms == 1);
    CHECK(h.backend.in_use() == 40 * kMiB);
    const AllocResult fits = h.try_alloc(10 * kMiB);  // exactly at the cap
    CHECK(fits.status == AllocStatus::kOk);
    CHECK(h.pool.reserved_bytes() == 50 * kMiB);
    h.free(a);
  }
  SECTION("the retry steps free cached memory to get under the cap") {
    Harness h(100 * kMiB, gc_options(0.0, 0.5));
    const std::uintptr_t a = h.alloc(40 * kMiB, 1);
    h.alloc(10 * kMiB, 1);
    h.free(a);
    const AllocResult r = h.try_alloc(12 * kMiB, 2);
    REQUIRE(r.status == AllocStatus::kOk);
    CHECK(h.stats().num_alloc_retries == 1);
    CHECK(h.stats().num_device_free == 1);
    CHECK(h.pool.reserved_bytes() == 22 * kMiB);
  }
  SECTION("lowering the fraction below what is reserved frees nothing by itself") {
    // PyTorch's setMemoryFraction only sets the cap; memory already reserved stays until it is
    // released. check_invariants() reports reserved > allowed meanwhile (see the test report).
    Harness h(100 * kMiB);
    const std::uintptr_t a = h.alloc(40 * kMiB);
    const std::uintptr_t b = h.alloc(12 * kMiB);
    h.free(b);
    h.pool.set_memory_fraction(0.3);  // 30 MiB, below the 52 MiB reserved
    CHECK(h.pool.reserved_bytes() == 52 * kMiB);
    CHECK(cudapool::pool::check_invariants(h.pool) ==
          std::vector<std::string>{"reserved memory above the memory fraction cap"});
    // The next miss frees the idle 12 MiB segment, then fails: 40 + 2 MiB is still over 30 MiB.
    CHECK(h.pool.malloc(512).status == AllocStatus::kOutOfMemory);
    CHECK(h.pool.reserved_bytes() == 40 * kMiB);
    CHECK(h.stats().num_device_free == 1);
    CHECK(h.pool.free(a) == FreeStatus::kOk);
    h.pool.empty_cache();
    h.check();
    CHECK(h.alloc(512) != 0);
  }
  SECTION("lowering the fraction later applies to the next segment") {
    Harness h(100 * kMiB);
    h.alloc(40 * kMiB);
    h.pool.set_memory_fraction(0.4);
    CHECK(h.try_alloc(2 * kMiB).status == AllocStatus::kOutOfMemory);
    CHECK(h.try_alloc(512).status == AllocStatus::kOutOfMemory);  // a 2 MiB small segment too
    h.pool.set_memory_fraction(0.5);
    CHECK(h.try_alloc(512).status == AllocStatus::kOk);
  }
}

TEST_CASE("pool: a freed block waits for its reuse fence before it is handed out again") {
  Harness h(kGiB);
  h.backend.set_fences(true);
  const std::uintptr_t a = h.alloc(512);
  const std::uintptr_t seg = h.segment_of(a);
  h.free(a);
  CHECK(h.pool.pending_fences() == 1);
  CHECK(h.backend.live_fences() == 1);
  CHECK(h.cur("active", "all") == 1);
  CHECK(h.cur("active_bytes", "small_pool") == 512);
  CHECK(h.cur("allocated_bytes", "all") == 0);
  CHECK(h.cur("allocation", "all") == 0);
  CHECK(h.cur("requested_bytes", "all") == 512);

  const std::uintptr_t b = h.alloc(512);  // the fence has not passed: a is not reused
  CHECK(b == seg + 512);
  CHECK(h.pool.pending_fences() == 1);

  h.backend.complete_fences();
  const std::uintptr_t c = h.alloc(512);  // processes the fence first, then best fit finds a
  CHECK(c == seg);
  CHECK(h.pool.pending_fences() == 0);
  CHECK(h.backend.live_fences() == 0);
  CHECK(h.backend.fences_waited() == 0);
  CHECK(h.cur("active", "all") == 2);

  // Blocks waiting on fences do not merge; they do once the fences pass.
  h.backend.hold_fences();
  h.free(c);
  h.free(b);
  CHECK(h.blocks_in_segment(seg) == 3);
  CHECK(h.cur("inactive_split", "small_pool") == 1);  // only the tail
  h.backend.complete_fences();
  const std::uintptr_t d = h.alloc(kMiB);
  CHECK(d == seg);
  CHECK(h.blocks_in_segment(seg) == 2);
  CHECK(h.stats().num_device_alloc == 1);
}

TEST_CASE("pool: when memory is short the pool waits for pending fences and reuses the memory") {
  Harness h(40 * kMiB);
  h.backend.set_fences(true);
  const std::uintptr_t a = h.alloc(30 * kMiB);
  h.free(a);
  CHECK(h.cur("active_bytes", "all") == static_cast<std::int64_t>(30 * kMiB));
  const AllocResult r = h.try_alloc(30 * kMiB);
  REQUIRE(r.status == AllocStatus::kOk);
  CHECK(h.backend.fences_waited() == 1);
  CHECK(h.backend.live_fences() == 0);
  CHECK(h.pool.pending_fences() == 0);
  CHECK(h.stats().num_sync_all_streams == 1);
  CHECK(h.stats().num_alloc_retries == 1);
  CHECK(h.stats().num_device_free == 1);
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);

  // empty_cache waits too.
  h.free(r.ptr);
  CHECK(h.pool.pending_fences() == 1);
  h.empty_cache();
  CHECK(h.backend.fences_waited() == 2);
  CHECK(h.pool.pending_fences() == 0);
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.cur("active", "all") == 0);
}

// A pool whose context is gone: forget_all drops every block and segment without a backend call
// (the driver took the memory), and the pool starts again from nothing.
TEST_CASE("pool: forget_all forgets allocated, cached and pending blocks without freeing") {
  for (const bool vmm : {false, true}) {
    CAPTURE(vmm);
    Harness h(256 * kMiB, vmm ? expandable() : Options{});
    const std::uintptr_t live_small = h.alloc(1000);
    const std::uintptr_t live_large = h.alloc(30 * kMiB);
    h.free(h.alloc(4 * kMiB));
    h.free(h.alloc(600));
    const std::size_t in_use = h.backend.in_use();
    const std::size_t segments = h.backend.live_segments();
    const std::size_t pages = h.backend.backed_pages();
    REQUIRE(h.pool.reserved_bytes() > 0);

    h.pool.forget_all();
    CHECK(h.backend.in_use() == in_use);  // nothing given back through the backend
    CHECK(h.backend.live_segments() == segments);
    CHECK(h.backend.backed_pages() == pages);
    CHECK(h.pool.reserved_bytes() == 0);
    CHECK(h.pool.find_allocated(live_small) == nullptr);
    CHECK(h.pool.find_allocated(live_large) == nullptr);
    CHECK(h.pool.idle_cached_bytes() == 0);
    std::size_t blocks = 0;
    h.pool.for_each_block([&](const cudapool::pool::Block&) { ++blocks; });
    CHECK(blocks == 0);
    CHECK(h.pool.free(live_small) == FreeStatus::kNotOwned);
    CHECK(h.stats().num_device_alloc == 0);

    const AllocResult again = h.pool.malloc(1000);
    REQUIRE(again.status == AllocStatus::kOk);
    CHECK_FALSE(again.cache_hit);
    CHECK(h.pool.find_allocated(again.ptr) != nullptr);
    CHECK(h.pool.free(again.ptr) == FreeStatus::kOk);
  }
}

TEST_CASE("pool: before a new segment it waits a little for fenced blocks that could serve") {
  Harness h(kGiB);
  h.backend.set_fences(true);
  const std::uintptr_t a = h.alloc(30 * kMiB);
  h.free(a);
  CHECK(h.pool.pending_fences() == 1);
  h.backend.set_fence_wait_cost(1000);  // the work behind the fence is nearly done
  const std::uintptr_t b = h.alloc(30 * kMiB);
  CHECK(b == a);  // the fenced block, not a new segment
  CHECK(h.backend.bounded_waits() == 1);
  // The budget is what the segment's cudaMalloc would cost: 60 us plus 2.2 ms per GiB.
  CHECK(h.backend.last_wait_budget() == 60000 + 30 * kMiB / 450);
  CHECK(h.stats().num_device_alloc == 1);
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);
  CHECK(h.pool.pending_fences() == 0);
  // A request the free cache serves asks for no wait.
  h.free(b);
  h.backend.complete_fences();
  h.alloc(30 * kMiB);
  CHECK(h.backend.bounded_waits() == 1);
}

TEST_CASE(
    "pool: a fenced wait that runs out grows the pool, and is not tried again for that fence") {
  Harness h(kGiB);
  h.backend.set_fences(true);
  const std::uintptr_t a = h.alloc(30 * kMiB);
  h.free(a);
  // The fence's work runs long (the default): the wait gives up, a new segment serves.
  const std::uintptr_t b = h.alloc(30 * kMiB);
  CHECK(b != a);
  CHECK(h.backend.bounded_waits() == 1);
  CHECK(h.stats().num_device_alloc == 2);
  // The same fence still holds the oldest block: no second wait.
  const std::uintptr_t c = h.alloc(30 * kMiB);
  CHECK(c != a);
  CHECK(h.backend.bounded_waits() == 1);
  CHECK(h.stats().num_device_alloc == 3);
  // Once it passed, the block serves without a wait.
  h.backend.complete_fences();
  CHECK(h.alloc(30 * kMiB) == a);
  CHECK(h.backend.bounded_waits() == 1);
  CHECK(h.stats().num_device_alloc == 3);
}

TEST_CASE("pool: fenced blocks too small for the request are not waited for") {
  Harness h(kGiB);
  h.backend.set_fences(true);
  h.backend.set_fence_wait_cost(1000);
  const std::uintptr_t a = h.alloc(4 * kMiB);
  h.free(a);
  const std::uintptr_t b = h.alloc(30 * kMiB);  // 4 MiB fenced cannot cover 30 MiB
  CHECK(b != a);
  CHECK(h.backend.bounded_waits() == 0);
  CHECK(h.pool.pending_fences() == 1);
  // Nor are fenced blocks of the other pool (small) for a large request, or of another stream.
  const std::uintptr_t s = h.alloc(512);
  h.free(s);
  h.alloc(2 * kMiB, /*stream=*/7);
  CHECK(h.backend.bounded_waits() == 0);
}
