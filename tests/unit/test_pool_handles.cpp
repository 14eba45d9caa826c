// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_handles.cpp: expandable_handle_mb, the driver allocations (handles) that
// back an expandable segment's large-pool pages: the segment grows by whole pages as PyTorch's
// (the same reserved bytes), mapped in handles of up to that many whole pages, and memory goes
// back only in whole handles (empty_cache, idle release with a floor). The SimulatedBackend
// counts handles (backed_pages) and counts an unmapping that cuts a handle as misuse, which every
// Harness step checks. Not here: the conf key (test_config_handles.cpp), the shim's driver calls
// (tests/cli/expandable_handles.sh), tune's variants (test_tune_idle.cpp).
#include <cstddef>
#include <cstdint>

#include "pool/events.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using cudapool::pool::Action;
using cudapool::pool::kIdleTicks;

namespace {

Options handles(std::size_t handle_mib, Options o = expandable()) {
  o.expandable_handle = handle_mib * kMiB;
  return o;
}

}  // namespace

TEST_CASE("pool handles: the segment grows by whole pages, mapped in handles of whole pages") {
  // 230 MiB needs 12 pages of 20 MiB (240 MiB) under both settings; PyTorch's way maps 12
  // handles, handles of up to 100 MiB (5 pages) map 5 + 5 + 2.
  for (const auto& [handle_mib, expected_handles] :
       {std::pair<std::size_t, std::size_t>{0, 12}, {100, 3}, {110, 3}, {20, 12}, {10, 12}}) {
    INFO("expandable_handle_mb " << handle_mib);
    Harness h(8 * kGiB, handles(handle_mib));
    const std::uintptr_t a = h.alloc(230 * kMiB);
    CHECK(h.pool.reserved_bytes() == 240 * kMiB);
    CHECK(h.backend.in_use() == 240 * kMiB);
    CHECK(h.backend.backed_pages() == expected_handles);
    CHECK(h.stats().num_device_alloc == 1);  // one mapping call, whatever its handles
    // Growing the segment maps the missing pages only, in handles of their own.
    const std::uintptr_t b = h.alloc(30 * kMiB);
    CHECK(h.pool.reserved_bytes() == 260 * kMiB);
    CHECK(h.backend.backed_pages() == expected_handles + 1);
    h.free(a);
    h.free(b);
    h.empty_cache();
    CHECK(h.pool.reserved_bytes() == 0);
    CHECK(h.backend.backed_pages() == 0);
    CHECK(h.backend.live_reservations() == 0);
  }
}

TEST_CASE("pool handles: the small pool keeps one 2 MiB page per handle") {
  Harness h(8 * kGiB, handles(100));
  const std::uintptr_t a = h.alloc(kMiB);
  const std::uintptr_t b = h.alloc(kMiB);
  const std::uintptr_t c = h.alloc(kMiB);  // a second 2 MiB page of the small segment
  CHECK(h.pool.reserved_bytes() == 4 * kMiB);
  CHECK(h.backend.backed_pages() == 2);
  h.free(c);
  h.empty_cache();  // its page goes back alone
  CHECK(h.pool.reserved_bytes() == 2 * kMiB);
  CHECK(h.backend.backed_pages() == 1);
  h.free(a);
  h.free(b);
  h.empty_cache();
  CHECK(h.backend.backed_pages() == 0);
}

TEST_CASE("pool handles: a handle partly in use stays mapped, whole handles go back") {
  // One handle of 5 pages [0, 100 MiB) and one of 5 [100, 200 MiB). Then x takes 40 MiB and y
  // 60 MiB of the first, z 20 MiB of the second.
  for (const bool pytorch : {true, false}) {
    INFO((pytorch ? "one handle per page" : "handles of 100 MiB"));
    Harness h(8 * kGiB, handles(pytorch ? 0 : 100));
    const std::uintptr_t first = h.alloc(100 * kMiB);
    const std::uintptr_t second = h.alloc(100 * kMiB);
    const std::uintptr_t seg = h.segment_of(first);
    h.free(first);
    h.free(second);
    const std::uintptr_t x = h.alloc(40 * kMiB);
    const std::uintptr_t y = h.alloc(60 * kMiB);
    CHECK(x == seg);
    CHECK(y == seg + 40 * kMiB);
    const std::uintptr_t z = h.alloc(20 * kMiB);
    CHECK(z == seg + 100 * kMiB);
    CHECK(h.pool.reserved_bytes() == 200 * kMiB);

    // Free: x's 2 pages and the second handle's last 4 pages. One page per handle gives back all
    // 6; with handles of 5 pages only the pages of no handle still in use can go: none of x's
    // (its handle holds y), none of the second's (it holds z).
    h.free(x);
    h.empty_cache();
    CHECK(h.pool.reserved_bytes() == (pytorch ? 80 : 200) * kMiB);
    CHECK(h.backend.backed_pages() == (pytorch ? 4 : 2));

    // Once y is freed too, the first handle is whole and free: it goes.
    h.free(y);
    h.empty_cache();
    CHECK(h.pool.reserved_bytes() == (pytorch ? 20 : 100) * kMiB);
    CHECK(h.backend.backed_pages() == 1);
    h.free(z);
    h.empty_cache();
    CHECK(h.pool.reserved_bytes() == 0);
    CHECK(h.backend.backed_pages() == 0);
  }
}

TEST_CASE("pool handles: idle release down to the floor gives back the highest whole handles") {
  // 500 MiB in 5 handles of 100 MiB; a floor of 230 MiB leaves room for 270 MiB: two handles
  // (200 MiB) fit, a third would cross the floor. One page per handle gives back 13 pages.
  for (const bool pytorch : {true, false}) {
    INFO((pytorch ? "one handle per page" : "handles of 100 MiB"));
    EventLog log;
    Options o = handles(pytorch ? 0 : 100);
    o.idle_release_ms = 100;
    o.idle_release_floor = 230 * kMiB;
    Harness h(8 * kGiB, o, &log);
    h.free(h.alloc(500 * kMiB));
    for (std::uint32_t n = 0; n <= kIdleTicks; ++n) h.pool.release_idle_tick();
    h.check();
    REQUIRE_FALSE(log.events.empty());
    CHECK(log.events.back().action == Action::kIdleRelease);
    const std::size_t kept = pytorch ? 240 * kMiB : 300 * kMiB;
    CHECK(h.pool.reserved_bytes() == kept);
    CHECK(log.events.back().size == 500 * kMiB - kept);
    CHECK(h.backend.backed_pages() == (pytorch ? 12 : 3));
    // The kept handles serve the next request of their size without a mapping.
    const std::uint64_t maps = h.stats().num_device_alloc;
    h.free(h.alloc(kept));
    CHECK(h.stats().num_device_alloc == maps);
  }
}

TEST_CASE("pool handles: a request that grows the segment again maps handles of its own") {
  // After the top handles went back, a request larger than what is mapped maps the missing pages
  // above it; the old handles below stay as they were.
  Harness h(8 * kGiB, handles(100));
  const std::uintptr_t low = h.alloc(60 * kMiB);   // pages 0-2, one handle of 3
  const std::uintptr_t high = h.alloc(60 * kMiB);  // pages 3-5, one handle of 3
  h.free(high);
  h.empty_cache();
  CHECK(h.backend.backed_pages() == 1);
  h.free(low);
  // 200 MiB: the 60 MiB still mapped plus 140 MiB (7 pages: handles of 5 and 2) above it.
  const std::uintptr_t big = h.alloc(200 * kMiB);
  CHECK(big == low);
  CHECK(h.pool.reserved_bytes() == 200 * kMiB);
  CHECK(h.backend.backed_pages() == 3);
  h.free(big);
  h.empty_cache();
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.backend.backed_pages() == 0);
}
