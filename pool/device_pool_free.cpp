// SPDX-License-Identifier: Apache-2.0
// pool/device_pool_free.cpp: the free path of device_pool.h: a free (behind its reuse fence when
// the backend gives one), the block back into its pool, merged with idle neighbours, and the
// statistics it changes. Not here: allocation and splitting (device_pool.cpp), releasing memory
// (device_pool_release.cpp).
#include <algorithm>

#include "pool/device_pool.h"

namespace cudapool::pool {

namespace {
// dst, a neighbour of src in its segment, grows over src's bytes and takes its place in the list.
void take_over_range(Block* dst, Block* src) {
  if (dst->prev == src) {  // [src dst]
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {  // [dst src]
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  dst->size += src->size;
}

// Whether src, a neighbour of dst in its segment, is idle and merges with it (PyTorch merges only
// free blocks with no pending reuse and the same backing).
bool can_merge(const Block* dst, const Block* src) {
  return src != nullptr && !src->allocated && src->fence == 0 && dst->mapped == src->mapped;
}

// Note "in-place keys" (device_pool.cpp): a grown key can only rise above its successor.
bool still_sorted_after_growth(const SizeOrderedBlocks& set, SizeOrderedBlocks::const_iterator it,
                               std::size_t size, std::uintptr_t ptr) {
  const auto after = std::next(it);
  if (after == set.end()) return true;
  const Block key = sort_key((*it)->stream, size, ptr);
  return BlockBySize{}(&key, *after);
}

}  // namespace

FreeStatus DevicePool::free(std::uintptr_t ptr) {
  Block* block = active_.erase(ptr);
  if (block == nullptr) return FreeStatus::kNotOwned;
  free_allocated(block);
  return FreeStatus::kOk;
}

FreeStatus DevicePool::free_handle(Block* handle) {
  if (active_.tracking() == Tracking::kByAddress) {
    return handle != nullptr ? free(handle->ptr) : FreeStatus::kNotOwned;
  }
  if (handle == nullptr || !handle->allocated || !active_.holds(handle)) {
    return FreeStatus::kNotOwned;
  }
  active_.erase(handle);
  free_allocated(handle);
  return FreeStatus::kOk;
}

void DevicePool::free_allocated(Block* block) {
  block->allocated = false;
  update(*block->pool, [&](std::size_t t) {
    stats_.allocation[t].decrease(1);
    stats_.allocated_bytes[t].decrease(block->size);
  });
  emit(Action::kFreeRequested, block->ptr, block->requested_size, block->size, block->segment,
       block->stream);
  if (block->size >= options_.max_split_size) stats_.oversize_allocations.decrease(1);

  const std::uint64_t fence = backend_.fence_after_free(block->ptr, block->size, block->stream);
  if (fence != 0) {
    block->fence = fence;
    pending_.push_back(PendingFence{fence, block});
  } else {
    free_block(block);
  }
}

void DevicePool::free_block(Block* block) {
  emit(Action::kFreeCompleted, block->ptr, block->requested_size, block->size, block->segment,
       block->stream);
  const std::size_t original_size = block->size;
  const std::size_t requested = block->requested_size;
  const bool expandable = block->expandable != nullptr;
  BlockPool& pool = *block->pool;

  std::int64_t net_split_blocks = 0;
  std::int64_t net_split_bytes = 0;
  std::size_t subsumed = 0;
  Block* merged = absorb_into_free_neighbour(block, &subsumed);  // block is gone if it did
  if (merged != nullptr) {
    net_split_blocks -= 1;
    net_split_bytes -= static_cast<std::int64_t>(subsumed);
  } else {
    merged = block;
    for (Block* candidate : {block->prev, block->next}) {
      subsumed = try_merge_blocks(block, candidate, pool);
      if (subsumed > 0) {
        net_split_blocks -= 1;
        net_split_bytes -= static_cast<std::int64_t>(subsumed);
      }
    }
    block->requested_size = 0;
    insert_cached(pool, block);
  }
  if (merged->is_split()) {
    net_split_blocks += 1;
    net_split_bytes += static_cast<std::int64_t>(merged->size);
  }

  update(pool, [&](std::size_t t) {
    // Expandable segments are left out of inactive_split, as in PyTorch: their free pages can
    // always be released.
    if (!expandable) {
      if (net_split_blocks > 0)
        stats_.inactive_split[t].increase(static_cast<std::size_t>(net_split_blocks));
      if (net_split_blocks < 0)
        stats_.inactive_split[t].decrease(static_cast<std::size_t>(-net_split_blocks));
      if (net_split_bytes > 0)
        stats_.inactive_split_bytes[t].increase(static_cast<std::size_t>(net_split_bytes));
      if (net_split_bytes < 0)
        stats_.inactive_split_bytes[t].decrease(static_cast<std::size_t>(-net_split_bytes));
    }
    stats_.active[t].decrease(1);
    stats_.active_bytes[t].decrease(original_size);
    stats_.requested_bytes[t].decrease(requested);
  });
}

// Note "in-place keys". The free sets order blocks by (stream, size, address) through pointers,
// so a cached block's key may change without a set erase and insert (two rebalancing tree
// operations) as long as it still sorts between its neighbours in the set (still_sorted_after_*).
// Splitting a block shrinks the cached remainder; freeing a block next to one cached neighbour
// grows that neighbour. When the check fails, the blocks leave and re-enter the set as before.
// Which Block object represents the merged range is not visible: the result (blocks, order,
// statistics) is the same.
Block* DevicePool::absorb_into_free_neighbour(Block* block, std::size_t* subsumed) {
  if (block->expandable != nullptr) return nullptr;
  const bool prev_free = can_merge(block, block->prev);
  const bool next_free = can_merge(block, block->next);
  if (prev_free == next_free) return nullptr;  // none, or both: the general path
  Block* survivor = prev_free ? block->prev : block->next;
  const SizeOrderedBlocks& set = block->pool->blocks;
  const auto it = set.find(survivor);
  if (it == set.end() || !still_sorted_after_growth(set, it, survivor->size + block->size,
                                                    std::min(survivor->ptr, block->ptr))) {
    return nullptr;
  }

  *subsumed = survivor->size;
  take_over_range(survivor, block);
  survivor->gc_count_base = block->pool->lookups;
  survivor->idle_tick = idle_ticks_;
  delete_block(block);
  return survivor;
}

std::size_t DevicePool::try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
  if (!can_merge(dst, src)) return 0;
  // Take src out of its set while its key fields are intact.
  if (src->mapped) {
    erase_block(pool.blocks, src);
  } else {
    erase_block(pool.unmapped, src);
  }
  const std::size_t subsumed = src->size;
  take_over_range(dst, src);
  delete_block(src);
  return subsumed;
}

}  // namespace cudapool::pool
