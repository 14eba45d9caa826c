// SPDX-License-Identifier: Apache-2.0
// pool/invariants.cpp: see invariants.h.
#include "pool/invariants.h"

#include <map>
#include <set>
#include <sstream>

#include "pool/constants.h"

namespace cudapool::pool {

namespace {

struct Totals {
  std::int64_t allocated_bytes = 0, active_bytes = 0, reserved_bytes = 0, requested_bytes = 0;
  std::int64_t inactive_split_bytes = 0, allocations = 0, active = 0, inactive_split = 0;
  std::int64_t segments = 0;
};

std::string hex(std::uintptr_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

std::vector<std::string> check_invariants(const DevicePool& pool) {
  std::vector<std::string> problems;
  auto fail = [&](const std::string& what) { problems.push_back(what); };

  std::set<const Block*> all;
  pool.for_each_block([&](const Block& b) {
    if (!all.insert(&b).second) fail("block " + hex(b.ptr) + " is listed twice");
  });

  if (!pool.cache_sets_ordered()) fail("a free set is out of its key order");

  std::array<Totals, kStatTypes> totals{};
  std::map<const ExpandableSegment*, std::size_t> mapped_bytes;  // of segments with handles
  for (const Block* b : all) {
    if (b->prev != nullptr && b->prev->next != b) fail("prev/next mismatch at " + hex(b->ptr));
    if (b->next != nullptr && b->next->prev != b) fail("next/prev mismatch at " + hex(b->ptr));
    if (b->next != nullptr && b->next->ptr != b->end()) {
      fail("segment not contiguous after " + hex(b->ptr));
    }
    if (b->prev != nullptr && all.count(b->prev) == 0) fail("prev of " + hex(b->ptr) + " unknown");
    if (b->next != nullptr && all.count(b->next) == 0) fail("next of " + hex(b->ptr) + " unknown");
    if (b->size == 0 || b->size % kMinBlockSize != 0) fail("odd block size at " + hex(b->ptr));
    if (b->pool == nullptr) {
      fail("block without pool at " + hex(b->ptr));
      continue;
    }
    const bool idle = !b->allocated && b->fence == 0;
    if (b->allocated && !b->mapped) fail("allocated unbacked block at " + hex(b->ptr));
    if (b->allocated && !pool.lists_allocated(b)) {
      fail("allocated block not listed as allocated: " + hex(b->ptr));
    }
    if (idle && b->mapped && b->next != nullptr && b->next->mapped && !b->next->allocated &&
        b->next->fence == 0) {
      fail("two idle neighbours not merged at " + hex(b->ptr));
    }
    if (b->pool->is_small && b->expandable == nullptr && b->segment != 0) {
      // a small-pool segment is exactly one 2 MiB buffer
      if (b->prev == nullptr && b->next == nullptr && b->size != kSmallBuffer) {
        fail("small segment of odd size at " + hex(b->ptr));
      }
    }
    if (b->expandable != nullptr && b->expandable->handle_pages > 1) {
      mapped_bytes[b->expandable] += b->mapped ? b->size : 0;
    }
    if (!b->mapped) continue;
    const std::size_t type = b->pool->is_small ? 1 : 2;
    for (std::size_t t : {std::size_t{0}, type}) {
      Totals& x = totals[t];
      x.reserved_bytes += static_cast<std::int64_t>(b->size);
      if (b->prev == nullptr && b->expandable == nullptr) x.segments += 1;
      if (b->allocated) {
        x.allocated_bytes += static_cast<std::int64_t>(b->size);
        x.allocations += 1;
      }
      if (!idle) {
        x.active_bytes += static_cast<std::int64_t>(b->size);
        x.active += 1;
        x.requested_bytes += static_cast<std::int64_t>(b->requested_size);
      }
      if (idle && b->is_split() && b->expandable == nullptr) {
        x.inactive_split_bytes += static_cast<std::int64_t>(b->size);
        x.inactive_split += 1;
      }
    }
  }

  const DeviceStats& s = pool.stats();
  const char* names[kStatTypes] = {"all", "small_pool", "large_pool"};
  auto expect = [&](const char* what, std::size_t t, std::int64_t stat, std::int64_t counted) {
    if (stat != counted) {
      fail(std::string(what) + "." + names[t] + ".current is " + std::to_string(stat) +
           " but the blocks add up to " + std::to_string(counted));
    }
  };
  for (std::size_t t = 0; t < kStatTypes; ++t) {
    const Totals& x = totals[t];
    expect("allocated_bytes", t, s.allocated_bytes[t].current, x.allocated_bytes);
    expect("active_bytes", t, s.active_bytes[t].current, x.active_bytes);
    expect("reserved_bytes", t, s.reserved_bytes[t].current, x.reserved_bytes);
    expect("requested_bytes", t, s.requested_bytes[t].current, x.requested_bytes);
    expect("inactive_split_bytes", t, s.inactive_split_bytes[t].current, x.inactive_split_bytes);
    expect("allocation", t, s.allocation[t].current, x.allocations);
    expect("active", t, s.active[t].current, x.active);
    expect("inactive_split", t, s.inactive_split[t].current, x.inactive_split);
    expect("segment", t, s.segment[t].current, x.segments);
    for (const Stat* st : {&s.allocated_bytes[t], &s.reserved_bytes[t], &s.active_bytes[t]}) {
      if (st->peak < st->current)
        fail(std::string("a peak below its current value in ") + names[t]);
      if (st->allocated - st->freed != st->current) {
        fail(std::string("allocated - freed != current in ") + names[t]);
      }
    }
  }
  // The handles of an expandable segment (expandable_handle_mb) cover its mapped pages exactly:
  // in the segment, none longer than handle_pages, none overlapping the next.
  for (const auto& [es, bytes] : mapped_bytes) {
    std::size_t pages = 0, after_last = 0;
    for (const auto& [first, length] : es->handles) {
      if (first < after_last || length == 0 || length > es->handle_pages ||
          first + length > es->pages) {
        fail("a handle of pages [" + std::to_string(first) + ", +" + std::to_string(length) +
             ") in the expandable segment at " + hex(es->base));
      }
      after_last = first + length;
      pages += length;
    }
    if (pages * es->page_size != bytes) {
      fail("the handles of the expandable segment at " + hex(es->base) + " hold " +
           std::to_string(pages) + " pages, its mapped blocks " + std::to_string(bytes) + " bytes");
    }
  }
  if (static_cast<std::int64_t>(pool.reserved_bytes()) != s.reserved_bytes[0].current) {
    fail("reserved counter differs from reserved_bytes.all.current");
  }
  // With expandable segments PyTorch checks the cap against the rounded request but maps whole
  // pages, so reserved memory may end up to one page above the cap; only plain segments must
  // stay under it.
  if (pool.allowed_memory() && !pool.options().expandable_segments &&
      pool.reserved_bytes() > *pool.allowed_memory()) {
    fail("reserved memory above the memory fraction cap");
  }
  return problems;
}

// A member, defined here with the other checks: the sets are private to the pool.
bool DevicePool::cache_sets_ordered() const {
  auto ordered = [](const auto& set) {
    const auto less = set.key_comp();
    const Block* before = nullptr;
    for (const Block* b : set) {
      if (before != nullptr && !less(before, b)) return false;
      if (set.find(const_cast<Block*>(b)) == set.end()) return false;
      before = b;
    }
    return true;
  };
  return ordered(small_.blocks) && ordered(large_.blocks) && ordered(small_.unmapped) &&
         ordered(large_.unmapped);
}

}  // namespace cudapool::pool
