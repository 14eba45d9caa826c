// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_idle_clock.cpp: idle release in the pool (idle_release_ms,
// idle_release_floor_mb): DevicePool::release_idle_tick and idle_release_due over a
// SimulatedBackend. When a tick counts, when a cached block is idle long enough (more than
// kIdleTicks ticks), the floor (whole segments whole or not at all, an expandable segment's range
// down to the floor by its highest pages, the pages kept serving the next request), the order,
// expandable segments' pages, reuse fences, the idle_release event. Not here: who ticks the clock
// (the shim's release thread, the replay: test_replay_idle.cpp), the conf keys
// (test_config_idle.cpp), release_idle_segments (test_pool_release_idle.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using Names = std::vector<std::string>;
using cudapool::pool::Action;
using cudapool::pool::kIdleTicks;

namespace {

Options idle(std::uint64_t ms = 100, std::size_t floor = 0, Options o = Options{}) {
  o.idle_release_ms = ms;
  o.idle_release_floor = floor;
  return o;
}

// One tick, with the pool's invariants and the statistics checked after it; what the tick gave
// back (the reserved drop) must be the size its idle_release event says.
bool tick(Harness& h, EventLog& log) {
  const std::size_t before = h.pool.reserved_bytes();
  log.events.clear();
  const bool ticked = h.pool.release_idle_tick();
  h.check();
  CHECK(h.cur("reserved_bytes", "all") == static_cast<std::int64_t>(h.pool.reserved_bytes()));
  CHECK(h.backend.in_use() == h.pool.reserved_bytes());
  if (ticked) {
    REQUIRE_FALSE(log.events.empty());
    CHECK(log.events.back().action == Action::kIdleRelease);
    CHECK(log.events.back().size == before - h.pool.reserved_bytes());
  } else {
    CHECK(log.events.empty());
    CHECK(h.pool.reserved_bytes() == before);
  }
  return ticked;
}

// The bytes the last tick's idle_release event reported.
std::size_t released(const EventLog& log) {
  REQUIRE_FALSE(log.events.empty());
  REQUIRE(log.events.back().action == Action::kIdleRelease);
  return log.events.back().size;
}

// kIdleTicks ticks that give nothing back (a block freed before them is not due yet).
void quiet_ticks(Harness& h, EventLog& log) {
  for (std::uint32_t n = 1; n <= kIdleTicks; ++n) {
    CHECK(tick(h, log));
    CHECK(released(log) == 0);
  }
}

}  // namespace

TEST_CASE("pool idle: the clock does not tick while idle release is off") {
  EventLog log;
  Harness h(kGiB, Options{}, &log);
  h.free(h.alloc(30 * kMiB));
  for (int i = 0; i < 20; ++i) {
    CHECK_FALSE(h.pool.idle_release_due());
    CHECK_FALSE(tick(h, log));
  }
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);
}

TEST_CASE("pool idle: a pool with nothing cached does not tick and emits nothing") {
  EventLog log;
  Harness h(kGiB, idle(), &log);
  CHECK_FALSE(tick(h, log));                    // an empty pool
  const std::uintptr_t a = h.alloc(30 * kMiB);  // a segment of its own, wholly in use
  for (int i = 0; i < 20; ++i) CHECK_FALSE(tick(h, log));
  // Those ticks did not count: freed now, the block still needs five ticks of its own.
  h.free(a);
  quiet_ticks(h, log);
  CHECK(tick(h, log));
  CHECK(released(log) == 30 * kMiB);
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK_FALSE(tick(h, log));  // nothing cached any more
}

TEST_CASE("pool idle: a freed segment goes back at the fifth tick, not the fourth") {
  EventLog log;
  Harness h(kGiB, idle(), &log);
  const std::uintptr_t kept = h.alloc(12 * kMiB);
  const std::uintptr_t a = h.alloc(30 * kMiB);
  const std::uintptr_t seg = h.segment_of(a);
  h.free(a);
  const std::int64_t device_frees = h.stats().num_device_free;
  for (std::uint32_t i = 1; i <= kIdleTicks; ++i) {
    INFO("tick " << i);
    CHECK_FALSE(h.pool.idle_release_due());
    CHECK(tick(h, log));
    CHECK(log.names() == Names{"idle_release"});
    CHECK(released(log) == 0);
    CHECK(h.pool.reserved_bytes() == 42 * kMiB);
  }
  CHECK(h.pool.idle_release_due());
  CHECK(tick(h, log));
  CHECK(log.names() == Names{"segment_free", "idle_release"});
  CHECK(log.events[0].ptr == seg);
  CHECK(released(log) == 30 * kMiB);
  CHECK(h.pool.reserved_bytes() == 12 * kMiB);
  CHECK(h.stats().num_device_free == device_frees + 1);
  CHECK(h.cur("segment", "all") == 1);
  CHECK(h.block_size(kept) == 12 * kMiB);  // the block in use and its segment stay
}

TEST_CASE("pool idle: reuse refreshes a block's stamp") {
  EventLog log;
  Harness h(kGiB, idle(), &log);
  std::uintptr_t a = h.alloc(30 * kMiB);
  h.free(a);
  for (int i = 0; i < 3; ++i) CHECK(tick(h, log));
  a = h.alloc(30 * kMiB);  // the cached segment, reused
  CHECK(h.stats().num_device_alloc == 1);
  h.free(a);  // cached again at tick 3
  for (std::uint32_t i = 1; i <= kIdleTicks; ++i) {
    CHECK(tick(h, log));
    CHECK(released(log) == 0);  // ticks 4 to 7: 5 ticks after the first free, 4 after the reuse
  }
  CHECK(tick(h, log));
  CHECK(released(log) == 30 * kMiB);
}

TEST_CASE("pool idle: a split segment stays while any of it is in use") {
  EventLog log;
  Harness h(kGiB, idle(), &log);
  const std::uintptr_t a = h.alloc(4 * kMiB);  // a 20 MiB large-pool segment, split
  // The free rest of it cannot go alone: no cached block could give memory back, no tick.
  for (int i = 0; i < 10; ++i) CHECK_FALSE(tick(h, log));
  CHECK(h.pool.reserved_bytes() == 20 * kMiB);
  h.free(a);  // the segment whole again, cached now
  for (std::uint32_t i = 1; i <= kIdleTicks; ++i) CHECK(tick(h, log));
  CHECK(h.pool.reserved_bytes() == 20 * kMiB);
  CHECK(tick(h, log));
  CHECK(h.pool.reserved_bytes() == 0);
}

TEST_CASE("pool idle: the floor keeps reserved memory at or above it") {
  EventLog log;
  Harness h(kGiB, idle(100, 25 * kMiB), &log);
  const std::uintptr_t a = h.alloc(40 * kMiB);
  const std::uintptr_t b = h.alloc(30 * kMiB);
  const std::uintptr_t c = h.alloc(12 * kMiB);
  h.free(a);  // stamp 0
  CHECK(tick(h, log));
  h.free(b);  // stamp 1
  CHECK(tick(h, log));
  h.free(c);  // stamp 2
  CHECK(h.pool.reserved_bytes() == 82 * kMiB);
  for (int t = 3; t <= 4; ++t) CHECK(tick(h, log));
  CHECK(tick(h, log));  // tick 5: a goes, 42 MiB left
  CHECK(released(log) == 40 * kMiB);
  CHECK(tick(h, log));  // tick 6: b would leave 12 MiB, below the floor
  CHECK(released(log) == 0);
  CHECK(tick(h, log));  // tick 7: b still kept; c, idle for less, goes past it
  CHECK(released(log) == 12 * kMiB);
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);
  for (int t = 8; t <= 30; ++t) {
    CHECK(tick(h, log));
    CHECK(released(log) == 0);
  }
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);
  CHECK(h.pool.reserved_bytes() >= 25 * kMiB);
}

TEST_CASE("pool idle: in one tick, a smaller block goes past a larger one the floor keeps") {
  EventLog log;
  Harness h(kGiB, idle(100, 35 * kMiB), &log);
  const std::uintptr_t in_use = h.alloc(20 * kMiB);
  const std::uintptr_t b = h.alloc(30 * kMiB);
  const std::uintptr_t c = h.alloc(12 * kMiB);
  const std::uintptr_t c_seg = h.segment_of(c);
  h.free(b);  // stamp 0
  CHECK(tick(h, log));
  h.free(c);  // stamp 1
  for (int t = 2; t <= 5; ++t) {
    CHECK(tick(h, log));
    CHECK(released(log) == 0);  // tick 5: b alone is due, and would leave 32 MiB < 35
  }
  CHECK(tick(h, log));  // tick 6: b first (longer unused), kept; then c
  CHECK(log.names() == Names{"segment_free", "idle_release"});
  CHECK(log.events[0].ptr == c_seg);
  CHECK(released(log) == 12 * kMiB);
  CHECK(h.pool.reserved_bytes() == 50 * kMiB);
  CHECK(h.block_size(in_use) == 20 * kMiB);
}

TEST_CASE("pool idle: the longest unused goes first") {
  EventLog log;
  // The floor 60 MiB keeps both 30 MiB blocks until reserved memory grows.
  Harness h(kGiB, idle(100, 60 * kMiB), &log);
  const std::uintptr_t a = h.alloc(30 * kMiB);
  const std::uintptr_t b = h.alloc(30 * kMiB);
  const std::uintptr_t a_seg = h.segment_of(a);
  const std::uintptr_t b_seg = h.segment_of(b);
  h.free(b);  // b is freed first but reused below
  CHECK(tick(h, log));
  h.free(a);  // stamp 1
  CHECK(tick(h, log));
  const std::uintptr_t b2 = h.alloc(30 * kMiB);  // takes one of the two cached segments
  const std::uintptr_t b2_seg = h.segment_of(b2);
  h.free(b2);  // stamp 2: the other one is now the longest unused
  const std::uintptr_t older = b2_seg == a_seg ? b_seg : a_seg;
  for (int t = 3; t <= 10; ++t) {
    CHECK(tick(h, log));
    CHECK(released(log) == 0);  // 60 MiB reserved: any release breaks the floor
  }
  h.alloc(40 * kMiB);  // 100 MiB reserved: one 30 MiB segment may go, not both
  CHECK(tick(h, log));
  CHECK(log.names() == Names{"segment_free", "idle_release"});
  CHECK(log.events[0].ptr == older);
  CHECK(released(log) == 30 * kMiB);
  CHECK(h.pool.reserved_bytes() == 70 * kMiB);
}

TEST_CASE("pool idle: expandable segments give back whole unused pages, then the address space") {
  EventLog log;
  Harness h(kGiB, idle(100, 0, expandable()), &log);
  // Large-pool pages of 20 MiB. a takes [0, 1 MiB + 512) of page 0, b the next 30 MiB.
  const std::uintptr_t a = h.alloc(kMiB + 1);
  const std::uintptr_t b = h.alloc(30 * kMiB);
  const std::uintptr_t seg = h.segment_of(a);
  CHECK(h.pool.reserved_bytes() == 40 * kMiB);
  h.free(b);  // free: [1 MiB + 512, 40 MiB): page 1 wholly, page 0 partly
  quiet_ticks(h, log);
  CHECK(h.pool.idle_release_due());
  CHECK(tick(h, log));
  CHECK(log.names() == Names{"segment_unmap", "idle_release"});
  CHECK(log.events[0].ptr == seg + 20 * kMiB);
  CHECK(log.events[0].size == 20 * kMiB);
  CHECK(released(log) == 20 * kMiB);
  CHECK(h.pool.reserved_bytes() == 20 * kMiB);
  CHECK(h.backend.backed_pages() == 1);
  CHECK(h.backend.live_reservations() == 1);
  // The partly used page stays, however long: nothing more is due, and nothing cached could give
  // memory back, so the clock does not tick.
  for (int i = 0; i < 10; ++i) {
    CHECK_FALSE(h.pool.idle_release_due());
    CHECK_FALSE(tick(h, log));
  }
  CHECK(h.block_size(a) == kMiB + 512);
  // a freed: page 0 wholly unused, then unmapped, and the reservation given back with it.
  h.free(a);
  quiet_ticks(h, log);
  CHECK(tick(h, log));
  CHECK(log.names() == Names{"segment_unmap", "idle_release"});
  CHECK(released(log) == 20 * kMiB);
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.backend.backed_pages() == 0);
  CHECK(h.backend.live_reservations() == 0);
  CHECK_FALSE(tick(h, log));  // nothing cached
}

namespace {

// A 100 MiB block of an expandable segment (five 20 MiB large-pool pages), freed, then ticked
// until it is due (the fifth tick): what that tick gave back.
std::size_t floor_release(Harness& h, EventLog& log, std::uintptr_t* seg) {
  const std::uintptr_t a = h.alloc(100 * kMiB);
  *seg = h.segment_of(a);
  CHECK(h.pool.reserved_bytes() == 100 * kMiB);
  h.free(a);
  quiet_ticks(h, log);
  CHECK(h.pool.idle_release_due());
  CHECK(tick(h, log));
  return released(log);
}

}  // namespace

TEST_CASE("pool idle: under expandable segments the floor keeps the low pages of a range") {
  // Floors of whole pages and between them: reserved memory goes down to the floor rounded up to
  // a page, the range's highest pages unmapped in one call.
  for (const std::size_t floor_mb : {40, 50, 60, 79}) {
    INFO("floor " << floor_mb << " MiB");
    EventLog log;
    Harness h(kGiB, idle(100, floor_mb * kMiB, expandable()), &log);
    std::uintptr_t seg = 0;
    const std::size_t kept = (floor_mb + 19) / 20 * 20 * kMiB;
    CHECK(floor_release(h, log, &seg) == 100 * kMiB - kept);
    CHECK(log.names() == Names{"segment_unmap", "idle_release"});
    CHECK(log.events[0].ptr == seg + kept);
    CHECK(log.events[0].size == 100 * kMiB - kept);
    CHECK(h.pool.reserved_bytes() == kept);
    CHECK(h.backend.backed_pages() == kept / (20 * kMiB));
    CHECK(h.backend.live_reservations() == 1);
    CHECK(h.stat("num_device_free") == 1);
    CHECK(h.pool.idle_cached_bytes() == kept);
    // The part kept is not due again (the floor leaves no room for a page of it), and stays.
    for (int i = 0; i < 10; ++i) {
      CHECK_FALSE(h.pool.idle_release_due());
      CHECK(tick(h, log));
      CHECK(released(log) == 0);
    }
    CHECK(h.pool.reserved_bytes() == kept);
  }
}

TEST_CASE("pool idle: the pages the floor kept serve the next request without a new map") {
  EventLog log;
  Harness h(kGiB, idle(100, 50 * kMiB, expandable()), &log);
  std::uintptr_t seg = 0;
  CHECK(floor_release(h, log, &seg) == 40 * kMiB);
  const std::int64_t maps = h.stat("num_device_alloc");
  log.events.clear();
  const std::uintptr_t b = h.alloc(50 * kMiB);  // fits in the 60 MiB kept
  CHECK(b == seg);
  CHECK(h.stat("num_device_alloc") == maps);
  CHECK(h.backend.backed_pages() == 3);
  CHECK(log.names() == Names{"alloc"});
  CHECK(h.pool.reserved_bytes() == 60 * kMiB);
  h.free(b);
  // One larger than the part kept grows it upwards: only the missing page is mapped.
  log.events.clear();
  const std::uintptr_t c = h.alloc(70 * kMiB);
  CHECK(c == seg);
  CHECK(h.stat("num_device_alloc") == maps + 1);
  CHECK(log.names() == Names{"segment_map", "alloc"});
  CHECK(log.events[0].ptr == seg + 60 * kMiB);
  CHECK(log.events[0].size == 20 * kMiB);
  CHECK(h.pool.reserved_bytes() == 80 * kMiB);
}

TEST_CASE("pool idle: the floor does not keep an island above a hole") {
  // Pages of 20 MiB: x, a, i, t one page each, in that order from the segment's base. a and t go
  // back first (the floor, 30 MiB, leaves room for both); i, freed later, is then a mapped range
  // above an unmapped one. The floor would keep it (10 MiB of room, less than its page), but
  // mapped and unmapped free ranges never merge, so a kept island splits the unmapped space and
  // a later large request would map above the segment's top instead (a higher peak: 44.5 against
  // 38.8 GiB in the replay of a SAM log, docs/benchmarks.md, session 18). It goes, below the floor.
  EventLog log;
  Harness h(kGiB, idle(100, 30 * kMiB, expandable()), &log);
  const std::uintptr_t x = h.alloc(20 * kMiB);
  const std::uintptr_t a = h.alloc(20 * kMiB);
  const std::uintptr_t i = h.alloc(20 * kMiB);
  const std::uintptr_t t = h.alloc(20 * kMiB);
  const std::uintptr_t seg = h.segment_of(x);
  REQUIRE(a == seg + 20 * kMiB);
  REQUIRE(i == seg + 40 * kMiB);
  REQUIRE(t == seg + 60 * kMiB);
  CHECK(h.pool.reserved_bytes() == 80 * kMiB);
  h.free(a);
  h.free(t);
  quiet_ticks(h, log);
  CHECK(tick(h, log));
  CHECK(released(log) == 40 * kMiB);
  CHECK(h.pool.reserved_bytes() == 40 * kMiB);
  h.free(i);
  quiet_ticks(h, log);
  CHECK(h.pool.idle_release_due());
  CHECK(tick(h, log));
  CHECK(log.names() == Names{"segment_unmap", "idle_release"});
  CHECK(log.events[0].ptr == i);
  CHECK(released(log) == 20 * kMiB);
  CHECK(h.pool.reserved_bytes() == 20 * kMiB);  // below the floor: x's page, in use
  // x, freed, is at the segment's base (no hole below it) and below the floor: it stays.
  h.free(x);
  for (int n = 0; n < 10; ++n) {
    CHECK_FALSE(h.pool.idle_release_due());
    tick(h, log);
  }
  CHECK(h.pool.reserved_bytes() == 20 * kMiB);
}

TEST_CASE("pool idle: without a floor an expandable range goes whole, the address space too") {
  EventLog log;
  Harness h(kGiB, idle(100, 0, expandable()), &log);
  std::uintptr_t seg = 0;
  CHECK(floor_release(h, log, &seg) == 100 * kMiB);
  CHECK(log.names() == Names{"segment_unmap", "idle_release"});
  CHECK(log.events[0].ptr == seg);
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.backend.backed_pages() == 0);
  CHECK(h.backend.live_reservations() == 0);
  CHECK_FALSE(tick(h, log));  // nothing cached
}

TEST_CASE("pool idle: a whole segment the floor would cut into stays whole, and is not due") {
  EventLog log;
  Harness h(kGiB, idle(100, 50 * kMiB), &log);
  const std::uintptr_t a = h.alloc(100 * kMiB);  // a segment of its own
  h.free(a);
  for (int i = 1; i <= 20; ++i) {
    INFO("tick " << i);
    // Due would make the shim synchronize the device for a tick that gives nothing back.
    CHECK_FALSE(h.pool.idle_release_due());
    CHECK(tick(h, log));
    CHECK(released(log) == 0);
  }
  CHECK(h.pool.reserved_bytes() == 100 * kMiB);
  CHECK(h.stat("num_device_free") == 0);
  // With room for all of it above the floor (a request it cannot serve took a segment of its
  // own), it goes whole.
  h.alloc(120 * kMiB);
  CHECK(h.pool.idle_release_due());
  CHECK(tick(h, log));
  CHECK(released(log) == 100 * kMiB);
  CHECK(h.pool.reserved_bytes() == 120 * kMiB);
}

TEST_CASE(
    "pool idle: an expandable range idle long enough is stamped anew when a merge makes whole "
    "pages of it") {
  EventLog log;
  Harness h(kGiB, idle(100, 0, expandable()), &log);
  const std::uintptr_t a = h.alloc(kMiB + 1);
  const std::uintptr_t b = h.alloc(30 * kMiB);
  const std::uintptr_t c = h.alloc(5 * kMiB);  // [31 MiB + 512, 36 MiB + 512) of page 1
  h.free(b);                                   // [1 MiB + 512, 31 MiB + 512): no whole page
  for (int i = 0; i < 10; ++i) CHECK_FALSE(tick(h, log));  // nothing that could go: no tick
  CHECK(h.pool.reserved_bytes() == 40 * kMiB);
  h.free(a);  // merges with b's range: page 0 wholly free, cached now
  quiet_ticks(h, log);
  CHECK(tick(h, log));
  CHECK(released(log) == 20 * kMiB);
  CHECK(h.pool.reserved_bytes() == 20 * kMiB);
  CHECK(h.block_size(c) == 5 * kMiB);
  CHECK(h.backend.live_reservations() == 1);
}

TEST_CASE("pool idle: a block behind a reuse fence is not given back until the fence passed") {
  EventLog log;
  Harness h(kGiB, idle(), &log);
  const std::uintptr_t a = h.alloc(30 * kMiB);
  const std::uintptr_t b = h.alloc(12 * kMiB);
  const std::uint64_t holds = h.backend.fence_next_free();
  h.free(a);  // behind a fence that has not passed
  CHECK(h.pool.pending_fences() == 1);
  for (int i = 0; i < 10; ++i) CHECK_FALSE(tick(h, log));  // nothing cached: no tick
  h.free(b);                                               // cached: the clock runs
  for (std::uint32_t i = 1; i <= kIdleTicks; ++i) CHECK(tick(h, log));
  CHECK(tick(h, log));  // b goes; a, still fenced, stays
  CHECK(released(log) == 12 * kMiB);
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);
  CHECK(h.pool.pending_fences() == 1);
  CHECK_FALSE(tick(h, log));  // only a fenced block: no tick
  CHECK(h.backend.fences_waited() == 0);

  h.backend.pass_fence(holds);
  // The tick settles the passed fence (never waits): a is cached from then on, so the fifth tick
  // after it gives a back.
  for (std::uint32_t i = 1; i <= kIdleTicks; ++i) {
    CHECK(tick(h, log));
    CHECK(released(log) == 0);
    CHECK(h.pool.pending_fences() == 0);
  }
  CHECK(tick(h, log));
  CHECK(released(log) == 30 * kMiB);
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.backend.fences_waited() == 0);
  CHECK(h.stats().num_sync_all_streams == 0);
}

TEST_CASE("pool idle: the small pool's idle segments go too, statistics kept") {
  EventLog log;
  Harness h(kGiB, idle(1), &log);
  const std::uintptr_t s = h.alloc(512);  // a 2 MiB small-pool segment
  const std::uintptr_t l = h.alloc(30 * kMiB);
  h.free(s);
  h.free(l);
  for (std::uint32_t i = 1; i <= kIdleTicks; ++i) CHECK(tick(h, log));
  CHECK(tick(h, log));
  CHECK(released(log) == 32 * kMiB);
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.cur("segment", "all") == 0);
  CHECK(h.cur("reserved_bytes", "small_pool") == 0);
  CHECK(h.cur("reserved_bytes", "large_pool") == 0);
  CHECK(h.stat("num_device_free") == 2);
  // The pool works on afterwards.
  h.free(h.alloc(30 * kMiB));
  CHECK(h.pool.reserved_bytes() == 30 * kMiB);
}
