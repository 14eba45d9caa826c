// SPDX-License-Identifier: Apache-2.0
// pool/device_pool_idle.cpp: idle release (idle_release_ms, idle_release_floor_mb): one tick of the
// pool's idle clock, and what it gives back. See device_pool.h (release_idle_tick) and
// docs/pool-policy.md, "Idle release". Not here: who ticks the clock (the shim's release thread,
// shim/pools/idle_release.h; the replay), the other ways memory goes back
// (device_pool_release.cpp).
#include <algorithm>
#include <vector>

#include "pool/device_pool.h"

namespace cudapool::pool {

std::size_t DevicePool::idle_releasable_bytes(const Block* block) const {
  if (block->expandable == nullptr) return block->is_split() ? 0 : block->size;
  const auto [begin, end] = unmappable_pages(block);
  return (end - begin) * block->expandable->page_size;
}

std::size_t DevicePool::idle_release_bytes(const Block* block, std::size_t room) const {
  const std::size_t bytes = idle_releasable_bytes(block);
  if (bytes <= room) return bytes;
  // A whole segment goes whole or not at all (cudaFree frees it all); an expandable segment's
  // handles go one by one, as many as the floor leaves room for.
  if (block->expandable == nullptr) return 0;
  // An island (a free range just above an unmapped one) goes whole, floor or not: mapped and
  // unmapped free ranges never merge, so a kept island splits the unmapped space and a later large
  // request maps above the segment's top (a higher peak). The floor keeps the backed run from the
  // segment's base.
  if (block->prev != nullptr && !block->prev->mapped) return bytes;
  const auto [begin, end] = unmappable_pages(block, room);
  return (end - begin) * block->expandable->page_size;
}

bool DevicePool::idle_long_enough(const Block* block, std::uint32_t now) const {
  // Ticks wrap after 2^32 (49 days at the shortest tick): the difference is still right.
  return static_cast<std::uint32_t>(now - block->idle_tick) > kIdleTicks;
}

bool DevicePool::idle_release_due() const {
  if (options_.idle_release_ms == 0 || reserved_ <= options_.idle_release_floor) return false;
  // The tick gives back something when any candidate alone fits above the floor: the candidates
  // before it either gave something back or left the room as it is.
  const std::size_t room = reserved_ - options_.idle_release_floor;
  const std::uint32_t next = idle_ticks_ + 1;
  for (const BlockPool* pool : {&large_, &small_}) {
    for (const Block* b : pool->blocks) {
      if (idle_long_enough(b, next) && idle_release_bytes(b, room) > 0) return true;
    }
  }
  return false;
}

bool DevicePool::release_idle_tick(bool logged) {
  if (options_.idle_release_ms == 0) return false;
  // A tick that settled a fence is logged even when it gives nothing back: the replay must take
  // the block back at the same point (before a neighbour's free merges with it, or not).
  const std::size_t pending = pending_.size();
  process_fences();
  // Only the age of a cached block that could give memory back counts: one that cannot (a piece
  // of a split segment, or less than a page) becomes able to only by merging with a freed
  // neighbour or by new pages, and both stamp it anew. With none, the clock need not tick (and the
  // log of an idle program stays quiet).
  const auto releasable_cached = [&] {
    for (const BlockPool* pool : {&large_, &small_}) {
      for (const Block* b : pool->blocks) {
        if (idle_releasable_bytes(b) > 0) return true;
      }
    }
    return false;
  };
  if (!logged && pending_.size() == pending && !releasable_cached()) return false;
  idle_ticks_ += 1;

  // The candidates, the longest unused first; ties in the free sets' order (large pool first),
  // which the replay reproduces.
  struct Candidate {
    std::uint32_t idle_for;
    std::size_t order;
    Block* block;
  };
  std::vector<Candidate> candidates;
  if (reserved_ > options_.idle_release_floor) {
    for (BlockPool* pool : {&large_, &small_}) {
      for (Block* b : pool->blocks) {
        if (idle_long_enough(b, idle_ticks_) && idle_releasable_bytes(b) > 0) {
          candidates.push_back({idle_ticks_ - b->idle_tick, candidates.size(), b});
        }
      }
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.idle_for != b.idle_for ? a.idle_for > b.idle_for : a.order < b.order;
  });

  const std::size_t before = reserved_;
  for (const Candidate& c : candidates) {
    Block* block = c.block;
    // reserved_ >= the floor here: there were candidates only above it, and none goes below it.
    const std::size_t bytes = idle_release_bytes(block, reserved_ - options_.idle_release_floor);
    if (bytes == 0) continue;  // the floor stays reserved
    if (block->expandable == nullptr) {
      release_block(block);
    } else {
      // Down to the floor: the block's highest pages go, its low part stays cached and mapped
      // (unmap_block). block is now the unbacked range, merged with its unbacked neighbours.
      unmap_block(block, bytes);
      if (!block->is_split() && !block->mapped) release_expandable_segment(block);
    }
  }
  emit(Action::kIdleRelease, 0, before - reserved_, 0, 0, 0);
  return true;
}

}  // namespace cudapool::pool
