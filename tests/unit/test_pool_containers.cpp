// tests/unit/test_pool_containers.cpp: the pool's own containers: PtrMap (open addressing with
// backward-shift deletion) and NodeCache / CachingAllocator (recycled fixed-size nodes).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "pool/block.h"
#include "pool/node_cache.h"
#include "pool/ptr_map.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using cudapool::pool::Block;
using cudapool::pool::CachingAllocator;
using cudapool::pool::NodeCache;
using cudapool::pool::PtrMap;
using pooltest::splitmix;

namespace {

// The slot PtrMap's hash gives a key in a table of `slots` slots (a copy of PtrMap::home, used
// only to pick keys that collide; the tests stay valid, if weaker, should the hash change).
std::size_t home_of(std::uintptr_t key, std::size_t slots) {
  const unsigned log2_slots = static_cast<unsigned>(std::bit_width(slots) - 1);
  return static_cast<std::size_t>(((key >> 9) * 0x9E3779B97F4A7C15ull) >> (64 - log2_slots));
}

// Keys (multiples of 512) whose home slot, in the initial 1024-slot table, is one of `homes`;
// `per_home` keys for each.
std::vector<std::uintptr_t> keys_homed_at(const std::vector<std::size_t>& homes,
                                          std::size_t per_home) {
  std::vector<std::uintptr_t> out;
  std::map<std::size_t, std::size_t> found;
  for (std::uintptr_t i = 1; out.size() < homes.size() * per_home && i < (1u << 24); ++i) {
    const std::uintptr_t key = 0x7f0000000000 + i * 512;
    const std::size_t h = home_of(key, 1024);
    if (std::find(homes.begin(), homes.end(), h) != homes.end() && found[h] < per_home) {
      ++found[h];
      out.push_back(key);
    }
  }
  return out;
}

void check_same(const PtrMap& map, const std::map<std::uintptr_t, Block*>& ref,
                const std::vector<std::uintptr_t>& all_keys) {
  REQUIRE(map.size() == ref.size());
  for (const std::uintptr_t k : all_keys) {
    const auto it = ref.find(k);
    INFO("key " << k);
    REQUIRE(map.find(k) == (it == ref.end() ? nullptr : it->second));
  }
  std::size_t seen = 0;
  map.for_each([&](std::uintptr_t k, Block* b) {
    ++seen;
    const auto it = ref.find(k);
    REQUIRE(it != ref.end());
    REQUIRE(it->second == b);
  });
  REQUIRE(seen == ref.size());
}

struct Counted {
  explicit Counted(int v, int* live) : value(v), live_count(live) { ++*live_count; }
  ~Counted() { --*live_count; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  int value;
  int* live_count;
  char pad[40] = {};
};

}  // namespace

TEST_CASE("pool: PtrMap inserts, finds, replaces and erases") {
  std::vector<Block> blocks(4);
  PtrMap map;
  CHECK(map.size() == 0);
  CHECK(map.find(0x1000) == nullptr);
  CHECK(map.find(0) == nullptr);
  CHECK(map.erase(0x1000) == nullptr);
  CHECK(map.erase(0) == nullptr);

  map.insert(0x1000, &blocks[0]);
  map.insert(0x1200, &blocks[1]);
  CHECK(map.size() == 2);
  CHECK(map.find(0x1000) == &blocks[0]);
  CHECK(map.find(0x1200) == &blocks[1]);
  CHECK(map.find(0x1400) == nullptr);
  map.insert(0x1000, &blocks[2]);  // replaces
  CHECK(map.size() == 2);
  CHECK(map.find(0x1000) == &blocks[2]);
  CHECK(map.erase(0x1000) == &blocks[2]);
  CHECK(map.erase(0x1000) == nullptr);
  CHECK(map.find(0x1000) == nullptr);
  CHECK(map.find(0x1200) == &blocks[1]);
  CHECK(map.size() == 1);
  map.clear();
  CHECK(map.size() == 0);
  CHECK(map.find(0x1200) == nullptr);
  map.insert(0x1200, &blocks[3]);
  CHECK(map.find(0x1200) == &blocks[3]);
}

TEST_CASE("pool: PtrMap keeps colliding keys findable across erases and the table's wraparound") {
  // Runs of keys homed at the last slots and the first slot: probe runs wrap from 1023 to 0.
  const std::vector<std::uintptr_t> keys = keys_homed_at({1021, 1022, 1023, 0, 1}, 5);
  REQUIRE(keys.size() == 25);
  std::vector<Block> blocks(keys.size());
  std::vector<std::uintptr_t> probe = keys;
  probe.push_back(0x7f0000000000 + 512 * 3);  // never inserted

  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    std::uint64_t state = seed;
    PtrMap map;
    std::map<std::uintptr_t, Block*> ref;
    std::vector<std::size_t> order(keys.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (std::size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1], order[splitmix(state) % i]);
    }
    for (const std::size_t i : order) {
      map.insert(keys[i], &blocks[i]);
      ref[keys[i]] = &blocks[i];
    }
    check_same(map, ref, probe);
    // Erase in another random order, checking everything after each erase.
    for (std::size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1], order[splitmix(state) % i]);
    }
    for (const std::size_t i : order) {
      REQUIRE(map.erase(keys[i]) == &blocks[i]);
      ref.erase(keys[i]);
      check_same(map, ref, probe);
      // Now and then put an erased key back for a moment: holes get refilled.
      const std::size_t j = order[splitmix(state) % order.size()];
      if (splitmix(state) % 4 == 0 && ref.count(keys[j]) == 0) {
        map.insert(keys[j], &blocks[j]);
        ref[keys[j]] = &blocks[j];
        check_same(map, ref, probe);
        REQUIRE(map.erase(keys[j]) == &blocks[j]);
        ref.erase(keys[j]);
      }
    }
    REQUIRE(map.size() == 0);
  }
}

TEST_CASE("pool: PtrMap grows past half full and keeps every key") {
  constexpr std::size_t kKeys = 5000;  // grows 1024 -> 2048 -> ... -> 16384
  std::vector<Block> blocks(kKeys);
  PtrMap map;
  std::vector<std::uintptr_t> keys;
  std::uint64_t state = 42;
  std::set<std::uintptr_t> used;
  while (keys.size() < kKeys) {
    // Clustered addresses, as a device's are: a few regions, 512-byte aligned.
    const std::uintptr_t region = 0x7f0000000000 + (splitmix(state) % 4) * (std::uintptr_t{1} << 34);
    const std::uintptr_t key = region + (splitmix(state) % (1u << 20)) * 512;
    if (used.insert(key).second) keys.push_back(key);
  }
  for (std::size_t i = 0; i < kKeys; ++i) {
    map.insert(keys[i], &blocks[i]);
    if (i % 997 == 0) {
      for (std::size_t j = 0; j <= i; ++j) REQUIRE(map.find(keys[j]) == &blocks[j]);
    }
  }
  CHECK(map.size() == kKeys);
  for (std::size_t i = 0; i < kKeys; ++i) REQUIRE(map.find(keys[i]) == &blocks[i]);
  for (std::size_t i = 0; i < kKeys; i += 2) REQUIRE(map.erase(keys[i]) == &blocks[i]);
  CHECK(map.size() == kKeys / 2);
  for (std::size_t i = 0; i < kKeys; ++i) {
    REQUIRE(map.find(keys[i]) == (i % 2 == 0 ? nullptr : &blocks[i]));
  }
}

TEST_CASE("pool: PtrMap agrees with a reference map over random operations") {
  std::vector<Block> blocks(64);
  PtrMap map;
  std::unordered_map<std::uintptr_t, Block*> ref;
  std::uint64_t state = 7;
  for (int op = 0; op < 200000; ++op) {
    // A small key space so that inserts, replacements and erases keep hitting the same keys.
    const std::uintptr_t key = 0x7f0000000000 + (splitmix(state) % 3000) * 512;
    Block* block = &blocks[splitmix(state) % blocks.size()];
    const std::uint64_t what = splitmix(state) % 10;
    if (what < 5) {
      map.insert(key, block);
      ref[key] = block;
    } else if (what < 8) {
      const auto it = ref.find(key);
      REQUIRE(map.erase(key) == (it == ref.end() ? nullptr : it->second));
      if (it != ref.end()) ref.erase(it);
    } else {
      const auto it = ref.find(key);
      REQUIRE(map.find(key) == (it == ref.end() ? nullptr : it->second));
    }
    REQUIRE(map.size() == ref.size());
  }
  std::size_t seen = 0;
  map.for_each([&](std::uintptr_t k, Block* b) {
    ++seen;
    REQUIRE(ref.at(k) == b);
  });
  CHECK(seen == ref.size());
}

TEST_CASE("pool: NodeCache hands back freed nodes of its size, last freed first") {
  NodeCache cache;
  void* a = cache.get(48);
  void* b = cache.get(48);
  CHECK(a != b);
  cache.put(a, 48);
  cache.put(b, 48);
  CHECK(cache.get(48) == b);
  CHECK(cache.get(48) == a);
  // Another size is served and returned, but never mixed with the cached nodes.
  void* other = cache.get(96);
  CHECK(other != a);
  CHECK(other != b);
  cache.put(other, 96);
  cache.put(a, 48);
  CHECK(cache.get(48) == a);
  cache.put(a, 48);
  cache.put(b, 48);

  NodeCache tiny;  // below the size of a free-list link: still works
  void* t = tiny.get(1);
  tiny.put(t, 1);
  CHECK(tiny.get(1) == t);
  tiny.put(t, 1);
}

TEST_CASE("pool: make_cached and destroy_cached construct, destroy and recycle objects") {
  NodeCache cache;
  int live = 0;
  Counted* a = cudapool::pool::make_cached<Counted>(cache, 5, &live);
  CHECK(a->value == 5);
  CHECK(live == 1);
  cudapool::pool::destroy_cached(cache, a);
  CHECK(live == 0);
  Counted* b = cudapool::pool::make_cached<Counted>(cache, 6, &live);
  CHECK(static_cast<void*>(b) == static_cast<void*>(a));
  CHECK(b->value == 6);
  cudapool::pool::destroy_cached(cache, b);
  CHECK(live == 0);
}

TEST_CASE("pool: CachingAllocator runs a std::set over a NodeCache") {
  NodeCache cache;
  using Set = std::set<int, std::less<int>, CachingAllocator<int>>;
  {
    Set s{std::less<int>{}, CachingAllocator<int>(&cache)};
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 1000; ++i) s.insert((i * 7919) % 1000);
      CHECK(s.size() == 1000);
      CHECK(*s.begin() == 0);
      CHECK(*s.rbegin() == 999);
      for (int i = 0; i < 1000; i += 2) s.erase(i);
      CHECK(s.size() == 500);
      CHECK(*s.begin() == 1);
      s.clear();
    }
    const CachingAllocator<int> ints(&cache);
    const CachingAllocator<double> doubles(ints);  // rebinding keeps the cache
    CHECK(doubles.cache() == &cache);
    CHECK(ints == doubles);
    NodeCache other;
    CHECK_FALSE(ints == CachingAllocator<int>(&other));
    // Arrays bypass the cache.
    CachingAllocator<int> alloc(&cache);
    int* arr = alloc.allocate(10);
    arr[9] = 1;
    alloc.deallocate(arr, 10);
  }
}
