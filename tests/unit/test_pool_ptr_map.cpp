// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_ptr_map.cpp: the one hash map, pool/ptr_map.h (open addressing with
// backward-shift deletion): PtrMap, the pool's (key 0 reserved, 512-byte aligned addresses), and
// the replay's ProbeMap<uint64_t, AnyKeys> (any key but ~0, 0 included).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "pool/block.h"
#include "pool/ptr_map.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using cudapool::pool::AnyKeys;
using cudapool::pool::Block;
using cudapool::pool::DeviceAddressKeys;
using cudapool::pool::PtrMap;
using pooltest::splitmix;
using IdMap = cudapool::pool::ProbeMap<std::uint64_t, AnyKeys>;

namespace {

// The slot PtrMap's hash gives a key in a table of `slots` slots.
std::size_t home_of(std::uintptr_t key, std::size_t slots) {
  const unsigned log2_slots = static_cast<unsigned>(std::bit_width(slots) - 1);
  return DeviceAddressKeys::home(key, 64 - log2_slots);
}

// Keys (multiples of 512) whose home slot, in a table of `slots` slots, is one of `homes`;
// `per_home` keys for each.
std::vector<std::uintptr_t> keys_homed_at(const std::vector<std::size_t>& homes,
                                          std::size_t per_home, std::size_t slots) {
  std::vector<std::uintptr_t> out;
  std::map<std::size_t, std::size_t> found;
  for (std::uintptr_t i = 1; out.size() < homes.size() * per_home && i < (1u << 24); ++i) {
    const std::uintptr_t key = 0x7f0000000000 + i * 512;
    const std::size_t h = home_of(key, slots);
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

// Random inserts, replacements, claims, erases and finds over `key_of(0..key_space-1)`, checked
// against std::unordered_map; values from `value_of(random)`, never the map's absent value.
template <class Map, class KeyOf, class ValueOf>
void agrees_with_reference(Map& map, std::uint64_t key_space, KeyOf key_of, ValueOf value_of) {
  using Value = decltype(value_of(std::uint64_t{}));
  std::unordered_map<std::uint64_t, Value> ref;
  std::uint64_t state = 7;
  for (int op = 0; op < 200000; ++op) {
    const std::uint64_t key = key_of(splitmix(state) % key_space);
    const Value value = value_of(splitmix(state));
    const std::uint64_t what = splitmix(state) % 10;
    if (what < 4) {
      map.insert(key, value);
      ref[key] = value;
    } else if (what < 5) {
      // claim: a member is left as it is; a new key takes the value the caller writes.
      Value* const slot = map.claim(key);
      const auto it = ref.find(key);
      REQUIRE((slot == nullptr) == (it != ref.end()));
      if (slot != nullptr) {
        *slot = value;
        ref[key] = value;
      }
    } else if (what < 8) {
      const auto it = ref.find(key);
      REQUIRE(map.erase(key) == (it == ref.end() ? Value{} : it->second));
      if (it != ref.end()) ref.erase(it);
    } else {
      const auto it = ref.find(key);
      REQUIRE(map.find(key) == (it == ref.end() ? Value{} : it->second));
      REQUIRE(map.contains(key) == (it != ref.end()));
    }
    REQUIRE(map.size() == ref.size());
  }
  std::size_t seen = 0;
  map.for_each([&](std::uint64_t k, Value v) {
    ++seen;
    REQUIRE(ref.at(k) == v);
  });
  CHECK(seen == ref.size());
}

}  // namespace

TEST_CASE("pool: PtrMap inserts, finds, replaces and erases") {
  std::vector<Block> blocks(4);
  PtrMap map;
  CHECK(map.size() == 0);
  CHECK(map.find(0x1000) == nullptr);
  CHECK_FALSE(map.contains(0x1000));
  CHECK(map.erase(0x1000) == nullptr);

  map.insert(0x1000, &blocks[0]);
  map.insert(0x1200, &blocks[1]);
  CHECK(map.size() == 2);
  CHECK(map.find(0x1000) == &blocks[0]);
  CHECK(map.contains(0x1000));
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

TEST_CASE("pool: PtrMap reserves key 0: never found, erasing it changes nothing") {
  std::vector<Block> blocks(1);
  PtrMap map;
  CHECK(map.find(0) == nullptr);
  CHECK(map.erase(0) == nullptr);
  CHECK(map.size() == 0);
  map.insert(0x1000, &blocks[0]);
  CHECK(map.find(0) == nullptr);
  CHECK_FALSE(map.contains(0));
  CHECK(map.erase(0) == nullptr);
  CHECK(map.size() == 1);
  CHECK(map.find(0x1000) == &blocks[0]);
  // ~0 is an ordinary key for the pool.
  map.insert(~std::uintptr_t{0}, &blocks[0]);
  CHECK(map.find(~std::uintptr_t{0}) == &blocks[0]);
  CHECK(map.erase(~std::uintptr_t{0}) == &blocks[0]);
  CHECK(map.size() == 1);
}

TEST_CASE("pool: PtrMap keeps colliding keys findable across erases and the table's wraparound") {
  // 25 keys grow the table 16 -> 32 -> 64 (and erases never shrink it). Runs of keys homed at
  // the last slots and the first slots of the 64-slot table: probe runs wrap from 63 to 0.
  const std::vector<std::uintptr_t> keys = keys_homed_at({61, 62, 63, 0, 1}, 5, 64);
  REQUIRE(keys.size() == 25);
  std::vector<Block> blocks(keys.size());
  std::vector<std::uintptr_t> probe = keys;
  probe.push_back(0x7f0000000000 + 512 * 3);  // never inserted
  probe.push_back(0);                         // reserved

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
    REQUIRE(map.slot_count() == 64);
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
    REQUIRE(map.slot_count() == 64);
  }
}

TEST_CASE("pool: PtrMap grows past half full and keeps every key; clear gives the table back") {
  constexpr std::size_t kKeys = 5000;  // grows 16 -> 32 -> ... -> 16384
  std::vector<Block> blocks(kKeys);
  PtrMap map;
  CHECK(map.slot_count() == 16);
  std::vector<std::uintptr_t> keys;
  std::uint64_t state = 42;
  std::set<std::uintptr_t> used;
  while (keys.size() < kKeys) {
    // Clustered addresses, as a device's are: a few regions, 512-byte aligned.
    const std::uintptr_t region =
        0x7f0000000000 + (splitmix(state) % 4) * (std::uintptr_t{1} << 34);
    const std::uintptr_t key = region + (splitmix(state) % (1u << 20)) * 512;
    if (used.insert(key).second) keys.push_back(key);
  }
  for (std::size_t i = 0; i < kKeys; ++i) {
    map.insert(keys[i], &blocks[i]);
    REQUIRE(map.size() * 2 <= map.slot_count());  // never more than half full
    if (i == 7) CHECK(map.slot_count() == 16);
    if (i == 8) CHECK(map.slot_count() == 32);
    if (i % 997 == 0) {
      for (std::size_t j = 0; j <= i; ++j) REQUIRE(map.find(keys[j]) == &blocks[j]);
    }
  }
  CHECK(map.size() == kKeys);
  CHECK(map.slot_count() == 16384);
  for (std::size_t i = 0; i < kKeys; ++i) REQUIRE(map.find(keys[i]) == &blocks[i]);
  for (std::size_t i = 0; i < kKeys; i += 2) REQUIRE(map.erase(keys[i]) == &blocks[i]);
  CHECK(map.size() == kKeys / 2);
  for (std::size_t i = 0; i < kKeys; ++i) {
    REQUIRE(map.find(keys[i]) == (i % 2 == 0 ? nullptr : &blocks[i]));
  }
  map.clear();
  CHECK(map.size() == 0);
  CHECK(map.slot_count() == 16);
  for (std::size_t i = 0; i < kKeys; i += 97) REQUIRE(map.find(keys[i]) == nullptr);
}

TEST_CASE("pool: PtrMap agrees with a reference map over random operations") {
  std::vector<Block> blocks(64);
  PtrMap map;
  // A small key space so that inserts, replacements and erases keep hitting the same keys.
  agrees_with_reference(
      map, 3000, [](std::uint64_t i) { return 0x7f0000000000 + i * 512; },
      [&](std::uint64_t r) { return &blocks[r % blocks.size()]; });
}

TEST_CASE("pool: the replay's map takes any key but ~0, key 0 included") {
  IdMap map;
  CHECK(map.slot_count() == 1024);
  CHECK(map.find(0) == 0);
  CHECK(map.erase(0) == 0);
  map.insert(0, 5);  // a log may name pointer 0
  CHECK(map.contains(0));
  CHECK(map.find(0) == 5);
  CHECK(map.size() == 1);
  // ~0 is reserved: never found, erasing it changes nothing.
  CHECK(map.find(~std::uint64_t{0}) == 0);
  CHECK_FALSE(map.contains(~std::uint64_t{0}));
  CHECK(map.erase(~std::uint64_t{0}) == 0);
  CHECK(map.size() == 1);
  map.insert(1, 6);
  map.insert(1, 7);  // replaces
  CHECK(map.size() == 2);
  CHECK(map.erase(1) == 7);
  CHECK(map.erase(0) == 5);
  CHECK(map.erase(0) == 0);
  CHECK(map.size() == 0);
}

TEST_CASE("pool: the replay's map grows with small, unaligned keys and erases in any order") {
  IdMap map;
  constexpr std::uint64_t kKeys = 20000;  // consecutive keys from 0: grows 1024 -> ... -> 65536
  for (std::uint64_t k = 0; k < kKeys; ++k) map.insert(k, k + 1);
  CHECK(map.size() == kKeys);
  CHECK(map.slot_count() == 65536);
  for (std::uint64_t k = 0; k < kKeys; ++k) REQUIRE(map.find(k) == k + 1);
  CHECK(map.find(kKeys) == 0);
  for (std::uint64_t k = 0; k < kKeys; k += 3) REQUIRE(map.erase(k) == k + 1);
  for (std::uint64_t k = 0; k < kKeys; ++k) REQUIRE(map.find(k) == (k % 3 == 0 ? 0 : k + 1));
  std::size_t seen = 0;
  map.for_each([&](std::uint64_t k, std::uint64_t v) {
    ++seen;
    REQUIRE(k % 3 != 0);
    REQUIRE(v == k + 1);
  });
  CHECK(seen == map.size());
  map.clear();
  CHECK(map.size() == 0);
  CHECK(map.slot_count() == 1024);
  CHECK(map.find(1) == 0);
}

TEST_CASE("pool: the replay's map agrees with a reference map over random operations") {
  IdMap map;
  // Unaligned keys near 0 and near the top (just below the reserved ~0).
  agrees_with_reference(
      map, 3000, [](std::uint64_t i) { return i % 2 == 0 ? i / 2 : ~std::uint64_t{0} - 1 - i / 2; },
      [](std::uint64_t r) { return r | 1; });
}
