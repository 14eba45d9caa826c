// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_shim_clock.cpp: the hooks' clock (shim/support/clock.cpp) against
// CLOCK_MONOTONIC, across its calibrations (the first after 50 ms, the refined one after 5 s):
// never back, never far.
#include <time.h>

#include <algorithm>
#include <cstdint>

#include "shim/support/clock.h"
#include "tests/unit/catch.h"

namespace {

std::uint64_t reference_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

TEST_CASE("shim clock: monotonic and within 1 ms of CLOCK_MONOTONIC through both calibrations") {
  const std::uint64_t start = reference_ns();
  std::uint64_t last = cudapool::shim::monotonic_ns();
  std::uint64_t worst_back = 0;
  std::uint64_t worst_gap = 0;
  // 5.3 s of reads cover the first sample, the 50 ms calibration and the 5 s refinement (the
  // first read of this process may be this test's).
  while (reference_ns() - start < 5'300'000'000ull) {
    const std::uint64_t before = reference_ns();
    const std::uint64_t now = cudapool::shim::monotonic_ns();
    const std::uint64_t after = reference_ns();
    if (now < last) worst_back = std::max(worst_back, last - now);
    const std::uint64_t gap = now < before ? before - now : now > after ? now - after : 0;
    worst_gap = std::max(worst_gap, gap);
    last = now;
  }
  CHECK(worst_back == 0);
  CHECK(worst_gap < 1'000'000);
}
