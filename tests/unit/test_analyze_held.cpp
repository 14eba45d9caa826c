// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_held.cpp: the bytes held over time (tools/analyze/held.h,
// held_report.h): a series' area and the time at each figure on a hand-made piecewise-constant
// series, the time strictly above a level, the table that stays bounded whatever the number of
// distinct figures (and says how much of the time above it cannot place), an area past 128 bits,
// the mean rounded to the nearest byte, the level's forms (a fraction of the peak, a size) and its
// bytes. Not here: the figures of whole logs (tests/cli/report_held.sh, and the oracle's agreement
// on every log of the suite: analyze_agree.sh).
#include <cstdint>
#include <random>

#include "tests/unit/catch.h"
#include "tools/analyze/held.h"
#include "tools/analyze/held_report.h"

using namespace cudapool::analyze;

namespace {
constexpr std::uint64_t kS = 1000000000;  // ns in a second
constexpr Figure kMiB = Figure{1} << 20;
}  // namespace

TEST_CASE("held: a series' area and its time above a level, strictly above") {
  // 20 MiB from 1 s to 3 s, 80 MiB to 5 s, 20 MiB to 11 s: 320 MiB s over 10 s, mean 32 MiB.
  HeldDevice d;
  d.start(1 * kS);
  d.reserved.set(1 * kS, 20 * kMiB, &d.reserved_times);
  d.reserved.set(3 * kS, 80 * kMiB, &d.reserved_times);
  d.reserved.set(3 * kS, 80 * kMiB, &d.reserved_times);  // the same time twice: no time held
  d.reserved.set(5 * kS, 20 * kMiB, &d.reserved_times);
  d.finish(11 * kS);
  CHECK(d.reserved.area() == 320 * kMiB * Figure{kS});
  CHECK(d.reserved_times.bins() == 2);
  CHECK(d.reserved_times.above(40 * kMiB).ns == 2 * kS);
  CHECK(d.reserved_times.above(20 * kMiB).ns == 2 * kS);  // 20 MiB is not above 20 MiB
  CHECK(d.reserved_times.above(20 * kMiB - 1).ns == 10 * kS);
  CHECK(d.reserved_times.above(80 * kMiB).ns == 0);
  CHECK(d.reserved_times.above(40 * kMiB).unsure_ns == 0);

  HeldLevel half;
  const HeldPart p = held_part(d, half, 80 * kMiB, false, 10 * kS);
  REQUIRE(p.reserved);
  CHECK(!p.allocated);
  CHECK(p.reserved->level == 40 * kMiB);
  CHECK(p.reserved->mean == 32 * kMiB);
  CHECK(p.reserved->above_ns == 2 * kS);
  CHECK(p.reserved->share == 0.2);
  // No time span: no mean, no time above, the level still said.
  const HeldPart none = held_part(d, half, 80 * kMiB, true, std::uint64_t{0});
  CHECK(!none.reserved->mean);
  CHECK(!none.reserved->above_ns);
  CHECK(!none.reserved->share);
  CHECK(!none.allocated->mean);
}

TEST_CASE("held: the mean is rounded to the nearest byte, a half up") {
  HeldDevice d;
  d.start(0);
  d.allocated.set(0, 5, nullptr);
  d.allocated.set(1, 6, nullptr);  // 5 x 1 + 6 x 1 over 2 ns: 5.5 -> 6
  d.finish(2);
  CHECK(held_part(d, HeldLevel{}, std::nullopt, true, std::uint64_t{2}).allocated->mean == 6);
  HeldDevice e;
  e.start(0);
  e.allocated.set(0, 10, nullptr);  // 10 x 1 over 3 ns: 3.33 -> 3
  e.allocated.set(1, 0, nullptr);
  e.finish(3);
  CHECK(held_part(e, HeldLevel{}, std::nullopt, true, std::uint64_t{3}).allocated->mean == 3);
}

TEST_CASE("held: the table stays bounded, and says what it cannot place") {
  std::mt19937_64 rng(31);
  HeldTimes t;
  const std::size_t n = 5 * kHeldBins;
  std::uint64_t total = 0, truly_above = 0;
  const Figure level = Figure{1} << 39;
  for (std::size_t i = 0; i < n; ++i) {
    const Figure v = static_cast<Figure>(rng() >> 24);  // below 2^40: distinct, spread
    const std::uint64_t ns = 1 + rng() % 1000;
    t.add(v, ns);
    total += ns;
    if (v > level) truly_above += ns;
    REQUIRE(t.bins() <= kHeldBins);
  }
  CHECK(t.shift() > 0);
  const HeldTimes::Above a = t.above(level);
  CHECK(a.ns <= truly_above);
  CHECK(truly_above <= a.ns + a.unsure_ns);
  CHECK(t.above(-1).ns == total);  // every figure is above -1: nothing unsure
  CHECK(t.above(-1).unsure_ns == 0);
  // Figures on 2 MiB steps keep every bin's figures on one side of a level between them.
  HeldTimes steps;
  for (std::size_t i = 0; i < 2 * kHeldBins; ++i) {
    steps.add(static_cast<Figure>(i % 3) * 2 * kMiB + 2 * kMiB, 7);
  }
  CHECK(steps.bins() == 3);
  CHECK(steps.above(3 * kMiB).ns == 7 * ((2 * kHeldBins + 1) / 3 + (2 * kHeldBins) / 3));
}

TEST_CASE("held: an area past 128 bits is left out, not wrapped") {
  HeldSeries s;
  s.start(0);
  s.set(0, Figure{1} << 100, nullptr);
  s.set(std::uint64_t{1} << 40, 0, nullptr);  // 2^140 bytes x ns
  CHECK(s.overflowed());
  HeldSeries fine;
  fine.start(0);
  fine.set(0, Figure{1} << 64, nullptr);
  fine.finish(std::uint64_t{1} << 62, nullptr);
  CHECK(!fine.overflowed());
  CHECK(fine.area() == Figure{1} << 126);
}

TEST_CASE("held: the level's forms, and its bytes") {
  HeldLevel l;
  REQUIRE(parse_level("0.25", &l));
  CHECK(l.of_peak);
  CHECK(level_bytes(l, 80 * kMiB) == 20 * kMiB);
  CHECK(level_bytes(l, 7) == 1);  // floor(7 / 4): "above" is strictly above 1.75 either way
  REQUIRE(parse_level("1.0", &l));
  CHECK(level_bytes(l, 80 * kMiB) == 80 * kMiB);
  REQUIRE(parse_level("0.0", &l));
  CHECK(level_bytes(l, 80 * kMiB) == 0);
  REQUIRE(parse_level("10G", &l));
  CHECK(!l.of_peak);
  CHECK(l.bytes == std::uint64_t{10} << 30);
  CHECK(level_bytes(l, 1) == Figure{10} << 30);
  REQUIRE(parse_level("512MiB", &l));
  CHECK(l.bytes == std::uint64_t{512} << 20);
  REQUIRE(parse_level("1", &l));  // a plain number is bytes, as every size the tools take
  CHECK(!l.of_peak);
  CHECK(l.bytes == 1);
  REQUIRE(parse_level("1.5G", &l));
  CHECK(l.bytes == std::uint64_t{3} << 29);
  CHECK(l.given == "1.5G");
  for (const char* bad :
       {"1.5", "2.0", "", ".5", "0.", "half", "-0.5", "0.5%", "10X", "0.1234567891", "1e9"}) {
    INFO(bad);
    CHECK(!parse_level(bad, &l));
  }
}
