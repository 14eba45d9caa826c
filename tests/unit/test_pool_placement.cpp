// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_placement.cpp: the driver-like placement of simulated segments
// (pool/placement.h): the driver's own ranges, chunks of 32 MiB steps coming down, the newest chunk
// with room first, best fit inside a chunk, released chunks reused top-down with exact fits passed
// over; and the driver's real segment traces of the parity cases, replayed address for address.
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "pool/placement.h"
#include "pool/simulated_backend.h"
#include "tests/unit/catch.h"

using cudapool::pool::DriverPlacement;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::uintptr_t kTop = 0x100000000000;  // the ceiling: chunks come down from here
}  // namespace

TEST_CASE("placement: sizes in 2 MiB steps, chunks in 32 MiB steps") {
  CHECK(DriverPlacement::segment_size(1) == 2 * kMiB);
  CHECK(DriverPlacement::segment_size(21 * kMiB) == 22 * kMiB);
  CHECK(DriverPlacement::chunk_size(2 * kMiB) == 32 * kMiB);
  CHECK(DriverPlacement::chunk_size(32 * kMiB) == 32 * kMiB);
  CHECK(DriverPlacement::chunk_size(48 * kMiB) == 64 * kMiB);
  CHECK(DriverPlacement::chunk_size(1640 * kMiB) == 1664 * kMiB);
}

TEST_CASE("placement: the driver's own ranges, then chunks from the top down") {
  DriverPlacement p(kTop);
  CHECK(p.place(2 * kMiB) == kTop + 414 * kMiB);  // the driver's 2 MiB range
  CHECK(p.place(2 * kMiB) == kTop + 488 * kMiB);  // its 24 MiB range, upward
  CHECK(p.place(16 * kMiB) == kTop + 490 * kMiB);
  CHECK(p.live_chunks() == 0);
  const std::uintptr_t a = p.place(20 * kMiB);  // no room left for 20 MiB: a chunk of 32
  CHECK(a == kTop - 32 * kMiB);
  CHECK(p.place(2 * kMiB) == a + 20 * kMiB);    // the newest chunk before the driver's 6 MiB left
  const std::uintptr_t b = p.place(48 * kMiB);  // a chunk of 64, below
  CHECK(b == a - 64 * kMiB);
  CHECK(p.place(10 * kMiB) == b + 48 * kMiB);  // newest first: b's 16 MiB, not a's 10
  CHECK(p.place(10 * kMiB) == a + 22 * kMiB);  // then the older chunk
  CHECK(p.place(6 * kMiB) == b + 58 * kMiB);
  CHECK(p.place(6 * kMiB) == kTop + 506 * kMiB);  // every chunk full: the driver's range last
  CHECK(p.live_chunks() == 2);
}

TEST_CASE("placement: inside a chunk the smallest free range that fits, the lowest of equals") {
  DriverPlacement p(kTop);
  p.place(2 * kMiB);
  p.place(24 * kMiB);  // the driver's ranges are full
  const std::uintptr_t c = p.place(10 * kMiB);
  const std::uintptr_t s1 = p.place(4 * kMiB);
  const std::uintptr_t s2 = p.place(6 * kMiB);
  const std::uintptr_t s3 = p.place(4 * kMiB);
  CHECK(s1 == c + 10 * kMiB);
  CHECK(s2 == c + 14 * kMiB);
  CHECK(s3 == c + 20 * kMiB);  // 8 MiB left at c + 24
  p.release(c, 10 * kMiB);
  p.release(s2, 6 * kMiB);
  // Free: 10 MiB at c, 6 at s2, 8 at c + 24. 6 MiB takes the 6, 7 the 8, 2 the 10.
  CHECK(p.place(6 * kMiB) == s2);
  CHECK(p.place(7 * kMiB) == c + 24 * kMiB);
  CHECK(p.place(2 * kMiB) == c);
}

TEST_CASE("placement: freed chunks are released and reused top-down, exact fits passed over") {
  DriverPlacement p(kTop);
  p.place(2 * kMiB);
  p.place(24 * kMiB);
  const std::uintptr_t a = p.place(64 * kMiB);  // [top - 64, top)
  const std::uintptr_t b = p.place(64 * kMiB);  // [top - 128, top - 64)
  const std::uintptr_t c = p.place(32 * kMiB);  // [top - 160, top - 128)
  const std::uintptr_t d = p.place(128 * kMiB);
  const std::uintptr_t e = p.place(32 * kMiB);  // keeps d's range from the space below
  CHECK(d == kTop - 288 * kMiB);
  CHECK(e == kTop - 320 * kMiB);
  p.release(b, 64 * kMiB);  // a released range of 64 MiB between a and c
  CHECK(p.live_chunks() == 4);
  CHECK(p.place(64 * kMiB) == e - 64 * kMiB);  // the 64 MiB range fits exactly: passed over
  CHECK(p.place(32 * kMiB) == b + 32 * kMiB);  // a smaller one: the top of the highest range
  p.release(d, 128 * kMiB);
  p.release(c, 32 * kMiB);  // d, c and b's lower half merge: [top - 288, top - 96)
  CHECK(p.place(96 * kMiB) == b - 64 * kMiB);   // the top of the merged range; 96 MiB stay below
  CHECK(p.place(96 * kMiB) == e - 160 * kMiB);  // an exact fit again: from the space below
  CHECK(p.place(64 * kMiB) == b - 128 * kMiB);  // the rest of the merged range, its top
  CHECK(a == kTop - 64 * kMiB);
}

TEST_CASE("placement: released chunks at the bottom give the space back below") {
  DriverPlacement p(kTop);
  p.place(2 * kMiB);
  p.place(24 * kMiB);
  const std::uintptr_t a = p.place(32 * kMiB);
  const std::uintptr_t b = p.place(1024 * kMiB);
  const std::uintptr_t c = p.place(1024 * kMiB);
  p.release(b, 1024 * kMiB);
  p.release(c, 1024 * kMiB);  // both merge with the free space below a
  CHECK(p.place(1536 * kMiB) == a - 1536 * kMiB);
  CHECK(p.place(1024 * kMiB) == a - 2560 * kMiB);
}

TEST_CASE("placement: the H200 driver's segment traces of the parity cases, address for address") {
  // tests/parity/segment-traces/CASE.json: PyTorch's segment_alloc/segment_free with the driver's
  // addresses, in order. Every address the model gives must sit where the driver's did, relative
  // to the first segment.
  for (const char* name : {"small_pool", "roundup_2", "random_mix", "random_mix_max_split_roundup",
                           "random_mix_f0.05_gc"}) {
    INFO(name);
    std::ifstream file(std::string(CUDAPOOL_SOURCE_DIR) + "/tests/parity/segment-traces/" + name +
                       ".json");
    REQUIRE(file.good());
    const nlohmann::json trace = nlohmann::json::parse(file);
    DriverPlacement p(kTop);
    std::map<std::uint64_t, std::uintptr_t> placed;  // the driver's address -> the model's
    std::int64_t offset = 0;
    std::size_t segments = 0, exact = 0;
    for (const auto& e : trace.at("events")) {
      const std::string action = e.at(0);
      const std::uint64_t address = e.at(1);
      const std::size_t size = e.at(2);
      if (action == "segment_alloc") {
        const std::uintptr_t at = p.place(size);
        if (segments == 0) {
          offset = static_cast<std::int64_t>(address) - static_cast<std::int64_t>(at);
        }
        ++segments;
        exact += static_cast<std::int64_t>(at) + offset == static_cast<std::int64_t>(address);
        placed[address] = at;
      } else {
        REQUIRE(placed.count(address) == 1);
        p.release(placed[address], size);
        placed.erase(address);
      }
    }
    CHECK(segments > 0);
    CHECK(exact == segments);
  }
}

TEST_CASE("placement: the simulated backend places segments the driver's way only when asked") {
  cudapool::pool::SimulatedBackend fresh(1ull << 30, kTop);
  std::uintptr_t x = 0, y = 0;
  REQUIRE(fresh.allocate_segment(20 * kMiB, &x).ok());
  REQUIRE(fresh.allocate_segment(20 * kMiB, &y).ok());
  CHECK(y > x);  // increasing fresh addresses (the pool tests read them in order)
  cudapool::pool::SimulatedBackend driver(1ull << 30, kTop);
  driver.place_like_the_driver(true);
  REQUIRE(driver.allocate_segment(20 * kMiB, &x).ok());  // the driver's 24 MiB range
  REQUIRE(driver.allocate_segment(20 * kMiB, &y).ok());  // a chunk below it
  CHECK(y < x);
  driver.free_segment(x, 20 * kMiB);
  std::uintptr_t z = 0;
  REQUIRE(driver.allocate_segment(20 * kMiB, &z).ok());
  CHECK(z == x);  // the released range again
  CHECK(driver.misuse() == 0);
}
