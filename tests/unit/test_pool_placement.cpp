// tests/unit/test_pool_placement.cpp: the driver-like placement of simulated segments
// (pool/placement.h): 2 MiB segments upward, larger ones top-down in coarse slots, released
// ranges reused (the lowest for small segments, the highest for large ones), neighbours merged.
#include "pool/placement.h"
#include "pool/simulated_backend.h"
#include "tests/unit/catch.h"

using cudapool::pool::DriverPlacement;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::uintptr_t kBase = 0x100000000000;
constexpr std::uintptr_t kSpan = std::uintptr_t{1} << 40;
}  // namespace

TEST_CASE("placement: small segments go up, large ones come down from the top") {
  DriverPlacement p(kBase, kSpan);
  CHECK(p.place(2 * kMiB) == kBase);
  CHECK(p.place(2 * kMiB) == kBase + 2 * kMiB);
  const std::uintptr_t a = p.place(20 * kMiB);
  CHECK(a == kBase + kSpan - 20 * kMiB);
  const std::uintptr_t b = p.place(20 * kMiB);
  CHECK(b == a - 20 * kMiB);  // newer large segments sit lower: best fit prefers them on ties
  // From 60 MiB on, slots are 32 MiB steps.
  CHECK(DriverPlacement::slot_size(60 * kMiB) == 64 * kMiB);
  CHECK(DriverPlacement::slot_size(100 * kMiB) == 128 * kMiB);
  CHECK(DriverPlacement::slot_size(21 * kMiB) == 22 * kMiB);
  const std::uintptr_t c = p.place(100 * kMiB);
  CHECK(c == b - 128 * kMiB);
}

TEST_CASE("placement: released ranges are reused, merged with their neighbours") {
  DriverPlacement p(kBase, kSpan);
  const std::uintptr_t s1 = p.place(2 * kMiB);
  const std::uintptr_t s2 = p.place(2 * kMiB);
  p.place(2 * kMiB);
  p.release(s2, 2 * kMiB);
  p.release(s1, 2 * kMiB);
  CHECK(p.place(4 * kMiB / 2) == s1);  // the lowest free range first
  CHECK(p.place(2 * kMiB) == s2);
  const std::uintptr_t a = p.place(20 * kMiB);
  const std::uintptr_t b = p.place(20 * kMiB);
  const std::uintptr_t c = p.place(20 * kMiB);
  p.release(a, 20 * kMiB);
  p.release(b, 20 * kMiB);         // a and b merge into 40 MiB
  CHECK(p.place(40 * kMiB) == b);  // fits the merged range exactly
  p.release(c, 20 * kMiB);
  CHECK(p.place(10 * kMiB) == c + 10 * kMiB);  // the top of the highest free range
}

TEST_CASE("placement: the simulated backend places segments the driver's way only when asked") {
  cudapool::pool::SimulatedBackend fresh(1ull << 30, kBase);
  std::uintptr_t x = 0, y = 0;
  REQUIRE(fresh.allocate_segment(20 * kMiB, &x).ok());
  REQUIRE(fresh.allocate_segment(20 * kMiB, &y).ok());
  CHECK(y > x);  // increasing fresh addresses (the pool tests read them in order)
  cudapool::pool::SimulatedBackend driver(1ull << 30, kBase);
  driver.place_like_the_driver(true);
  REQUIRE(driver.allocate_segment(20 * kMiB, &x).ok());
  REQUIRE(driver.allocate_segment(20 * kMiB, &y).ok());
  CHECK(y < x);
  driver.free_segment(x, 20 * kMiB);
  std::uintptr_t z = 0;
  REQUIRE(driver.allocate_segment(20 * kMiB, &z).ok());
  CHECK(z == x);  // the released range again
  CHECK(driver.misuse() == 0);
}
