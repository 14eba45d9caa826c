// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_replay_backend.cpp: the simulated device the replay runs on
// (pool/simulated_backend.h) at its limits: its addresses stay inside its range (a full range is
// out of memory, never an overlap or a wrap), log addresses that cannot be used are refused, and
// terabytes of mapped pages cost a few ranges, not an entry a page (found by tests/fuzz:
// corpus/replay_fuzz/huge_device_memory_expandable timed out). Not here: the pool's policy
// (test_pool_*.cpp), the replay of a log (test_replay*.cpp).
#include <chrono>
#include <cstdint>

#include "pool/simulated_backend.h"
#include "tests/unit/catch.h"

using cudapool::pool::BackendStatus;
using cudapool::pool::SimulatedBackend;

namespace {
constexpr std::uintptr_t kMiB = std::uintptr_t{1} << 20;
constexpr std::uintptr_t kGiB = std::uintptr_t{1} << 30;
constexpr std::uintptr_t kTiB = std::uintptr_t{1} << 40;
}  // namespace

TEST_CASE("simulated backend: fresh ranges end at a quarter of the span: then out of memory") {
  const std::uintptr_t first = std::uintptr_t{1} << 48, span = 16 * kGiB;
  SimulatedBackend b(1ull << 50, first, span);
  std::uintptr_t ptr = 0;
  int reserved = 0;
  while (b.reserve_address_space(1 * kGiB - 4 * kMiB, &ptr).ok()) {
    CHECK(ptr >= first);
    CHECK(ptr + kGiB <= first + span / 4);
    ++reserved;
  }
  CHECK(reserved == 4);
  CHECK(b.address_refusals() == 1);
  CHECK(b.reserve_address_space(16 * kMiB, &ptr).status == BackendStatus::kOutOfMemory);
  CHECK(b.address_refusals() == 2);
}

TEST_CASE("simulated backend: driver-placed segments stay between a quarter and the middle") {
  const std::uintptr_t first = std::uintptr_t{1} << 48, span = 16 * kGiB;
  SimulatedBackend b(1ull << 50, first, span);
  b.place_like_the_driver(true);
  std::uintptr_t ptr = 0;
  int placed = 0;
  while (b.allocate_segment(1 * kGiB, &ptr).ok()) {
    CHECK(ptr >= first + span / 4);
    CHECK(ptr + kGiB <= first + span / 2 + kGiB);  // the driver's own ranges lie just above
    ++placed;
  }
  CHECK(placed >= 2);
  CHECK(b.address_refusals() == 1);
  CHECK(b.in_use() == placed * kGiB);  // a refused segment takes no memory
  CHECK(b.misuse() == 0);
}

TEST_CASE("simulated backend: log addresses it cannot use drop the address script") {
  const std::uintptr_t first = std::uintptr_t{1} << 48, span = std::uintptr_t{1} << 44;
  for (const std::uintptr_t bad :
       {std::uintptr_t{0}, first, first + span - 2 * kMiB, ~std::uintptr_t{0} - kMiB}) {
    INFO(bad);
    SimulatedBackend b(1ull << 40, first, span);
    b.script_segment_address(bad, 20 * kMiB);
    std::uintptr_t ptr = 0;
    REQUIRE(b.allocate_segment(20 * kMiB, &ptr).ok());
    CHECK(b.script_dropped());
    CHECK(b.scripted_segments() == 0);
    CHECK(ptr >= first);
    CHECK(ptr < first + span);
  }
  SimulatedBackend ok(1ull << 40, first, span);
  ok.script_segment_address(0x7f0000000000, 20 * kMiB);
  std::uintptr_t ptr = 0;
  REQUIRE(ok.allocate_segment(20 * kMiB, &ptr).ok());
  CHECK(ptr == 0x7f0000000000);
}

TEST_CASE("simulated backend: terabytes of pages are mapped and unmapped as ranges") {
  SimulatedBackend b(64 * kTiB);
  std::uintptr_t base = 0;
  REQUIRE(b.reserve_address_space(3 * kTiB, &base).ok());
  const auto start = std::chrono::steady_clock::now();
  // 1.5 million 2 MiB pages, in three mappings; the middle one unmapped in two halves.
  REQUIRE(b.map_pages(base, 1 * kTiB, 2 * kMiB).ok());
  REQUIRE(b.map_pages(base + 1 * kTiB, 1 * kTiB, 2 * kMiB).ok());
  REQUIRE(b.map_pages(base + 2 * kTiB, 1 * kTiB, 2 * kMiB).ok());
  CHECK(b.backed_pages() == 3 * (kTiB / (2 * kMiB)));
  b.unmap_pages(base + kTiB, kTiB / 2, 2 * kMiB);
  b.unmap_pages(base + kTiB + kTiB / 2, kTiB / 2, 2 * kMiB);
  CHECK(b.backed_pages() == 2 * (kTiB / (2 * kMiB)));
  CHECK(b.misuse() == 0);
  b.map_pages(base + kTiB / 2, 4 * kMiB, 2 * kMiB);  // already mapped: misuse
  CHECK(b.misuse() == 1);
  b.unmap_pages(base + kTiB, 2 * kMiB, 2 * kMiB);  // not mapped: misuse
  CHECK(b.misuse() == 2);
  b.unmap_pages(base, kTiB, 2 * kMiB);
  b.unmap_pages(base + 2 * kTiB, kTiB, 2 * kMiB);
  CHECK(b.backed_pages() == 0);
  b.release_address_space(base, 3 * kTiB);
  CHECK(b.misuse() == 2);
  // A page each would be 1.5 million tree nodes: seconds and a hundred MB.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300));
}

TEST_CASE("simulated backend: pages go back only in whole handles, as the driver's cuMemUnmap") {
  SimulatedBackend b(64 * kGiB);
  std::uintptr_t base = 0;
  REQUIRE(b.reserve_address_space(4 * kGiB, &base).ok());
  // 220 MiB in handles of 100 MiB: 100 + 100 + 20; then 60 MiB in one handle right above.
  REQUIRE(b.map_pages(base, 220 * kMiB, 100 * kMiB).ok());
  REQUIRE(b.map_pages(base + 220 * kMiB, 60 * kMiB, 60 * kMiB).ok());
  CHECK(b.backed_pages() == 4);
  CHECK(b.in_use() == 280 * kMiB);
  // Cutting a handle is misuse, whether at the start, the end or inside one.
  b.unmap_pages(base + 20 * kMiB, 80 * kMiB, 20 * kMiB);
  b.unmap_pages(base, 40 * kMiB, 20 * kMiB);
  b.unmap_pages(base + 200 * kMiB, 40 * kMiB, 20 * kMiB);
  CHECK(b.misuse() == 3);
  CHECK(b.backed_pages() == 4);
  CHECK(b.in_use() == 280 * kMiB);  // a refused unmapping gives nothing back
  // Whole handles go, across the two mappings too: the second 100 MiB handle, the 20 MiB one
  // and the 60 MiB one.
  b.unmap_pages(base + 100 * kMiB, 180 * kMiB, 20 * kMiB);
  CHECK(b.misuse() == 3);
  CHECK(b.backed_pages() == 1);
  b.unmap_pages(base, 100 * kMiB, 20 * kMiB);
  CHECK(b.backed_pages() == 0);
  CHECK(b.in_use() == 0);
  b.release_address_space(base, 4 * kGiB);
  CHECK(b.misuse() == 3);
}
