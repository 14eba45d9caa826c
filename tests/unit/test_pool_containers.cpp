// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_containers.cpp: the pool's node containers: NodeCache / CachingAllocator
// (recycled fixed-size nodes). The hash map (pool/ptr_map.h) is test_pool_ptr_map.cpp.
#include <cstddef>
#include <cstdint>
#include <set>

#include "pool/node_cache.h"
#include "tests/unit/catch.h"

using cudapool::pool::CachingAllocator;
using cudapool::pool::NodeCache;

namespace {

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
