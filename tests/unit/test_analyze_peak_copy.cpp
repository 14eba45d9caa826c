// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_peak_copy.cpp: the engine's copies of a state at its latest peak
// (tools/analyze/peak_copy.h, device_layout.h): whatever the mix of operations and peaks, the copy
// equals the state taken whole at the last peak, by the journal or by a whole copy, and the
// journal stays within twice the live state.
#include <map>
#include <random>
#include <set>
#include <vector>

#include "log/record.h"
#include "tests/unit/catch.h"
#include "tools/analyze/device_layout.h"
#include "tools/analyze/layout.h"
#include "tools/analyze/peak_copy.h"

using namespace cudapool::analyze;

namespace {

struct Toy {
  struct Op {
    int key;
    int value;  // 0: erase
  };
  std::map<int, int> m;
  void apply(const Op& op) {
    if (op.value == 0) {
      m.erase(op.key);
    } else {
      m[op.key] = op.value;
    }
  }
  std::size_t size() const { return m.size(); }
};

// A layout's whole content, comparable.
struct Seen {
  std::vector<Region> regions;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::int32_t, bool>> blocks;
  bool operator==(const Seen& o) const {
    if (regions.size() != o.regions.size() || blocks != o.blocks) return false;
    for (std::size_t i = 0; i < regions.size(); ++i) {
      if (regions[i].start != o.regions[i].start || regions[i].end != o.regions[i].end ||
          regions[i].seg != o.regions[i].seg) {
        return false;
      }
    }
    return true;
  }
};

Seen seen(const Layout& l) {
  Seen s;
  s.regions = l.regions();
  for (const PlacedBlock& b : l.sorted_blocks(false)) {
    s.blocks.emplace_back(b.ptr, b.block.block_size, b.block.seq, b.block.site, b.block.fenced);
  }
  return s;
}

Event event(int action, std::uint64_t ptr, std::uint64_t size, std::uint64_t seq) {
  Event e;
  e.action = action;
  e.ptr = ptr;
  e.size = size;
  e.block_size = size;
  e.seq = seq;
  return e;
}

}  // namespace

TEST_CASE("analyze peak copy: the copy is the state at the last peak, journal or whole copy") {
  for (const unsigned seed : {1u, 2u, 3u, 4u}) {
    std::mt19937 rng(seed);
    Toy live;
    PeakCopy<Toy, Toy::Op> copy;
    std::map<int, int> expected;
    bool peaked = false;
    // Seeds 3 and 4 go long between peaks: the journal overflows and a whole copy follows.
    const int gap = seed >= 3 ? 20000 : 50;
    for (int i = 0; i < 60000; ++i) {
      const Toy::Op op{static_cast<int>(rng() % 300), static_cast<int>(rng() % 4)};
      live.apply(op);
      copy.record(op, live.size());
      if (static_cast<int>(rng() % gap) == 0) {
        copy.peak(live);
        expected = live.m;
        peaked = true;
      }
    }
    REQUIRE(peaked);
    REQUIRE(copy.reached());
    CHECK(copy.at_peak().m == expected);
    if (seed >= 3) CHECK(copy.whole_copies() > 0);
  }
}

TEST_CASE("analyze peak copy: a device's layout at its reserved peak, exactly") {
  using A = cudapool::log::LogAction;
  const auto id = [](A a) { return static_cast<int>(a); };
  std::mt19937 rng(7);
  DeviceLayout d;
  Seen expected;
  std::uint64_t seq = 0;
  std::set<std::uint64_t> blocks;
  const std::uint64_t base = 0x7f0000000000;
  for (int i = 0; i < 40000; ++i) {
    const unsigned k = rng() % 10;
    const std::uint64_t slot = base + (rng() % 64) * 4096;
    Event e;
    if (k < 4) {
      e = event(id(A::kAlloc), slot, 512 * (1 + rng() % 8), ++seq);
      blocks.insert(slot);
    } else if (k < 6 && !blocks.empty()) {
      e = event(id(A::kFreeRequested), *blocks.begin(), 0, ++seq);
    } else if (k < 8 && !blocks.empty()) {
      e = event(id(A::kFreeCompleted), *blocks.begin(), 0, ++seq);
      blocks.erase(blocks.begin());
    } else {
      const A a = k == 8 ? A::kSegmentMap : A::kSegmentUnmap;
      e = event(id(a), base + (rng() % 16) * 65536, 65536 * (1 + rng() % 3), ++seq);
      e.has_segment = rng() % 2 == 0;
      e.segment = base;
    }
    d.event(e, static_cast<std::int32_t>(rng() % 5) - 1);
    if (rng() % 97 == 0 || i == 20) {
      d.reserved_peak();
      expected = seen(d.live());
    }
  }
  REQUIRE(d.reserved_peak_reached());
  CHECK(seen(d.at_reserved_peak()) == expected);
  // Past the peak the live layout went on: the copy is not the live state.
  CHECK(!(seen(d.live()) == expected));
}

TEST_CASE("analyze peak copy: the bytes each site holds at the allocated peak") {
  using A = cudapool::log::LogAction;
  DeviceLayout d;
  Event a = event(static_cast<int>(A::kAlloc), 0x1000, 512, 1);
  d.event(a, 0);
  a = event(static_cast<int>(A::kAlloc), 0x2000, 1024, 2);
  d.event(a, 1);
  d.allocated_peak();
  d.event(event(static_cast<int>(A::kFreeRequested), 0x1000, 0, 3), -1);  // fenced: not held
  a = event(static_cast<int>(A::kAlloc), 0x3000, 4096, 4);
  d.event(a, -1);
  const auto& held = d.at_allocated_peak().held;  // index site + 1
  REQUIRE(held.size() >= 3);
  CHECK(held[1].first == 1);
  CHECK(held[1].second == 512);
  CHECK(held[2].second == 1024);
  CHECK(held[0].first == 0);
}
