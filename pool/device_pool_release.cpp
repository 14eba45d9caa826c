// SPDX-License-Identifier: Apache-2.0
// pool/device_pool_release.cpp: giving memory back to the device (oversize blocks, all idle
// segments, garbage collection by age, empty_cache) and settling reuse fences. See device_pool.h.
#include <limits>

#include "pool/device_pool.h"

namespace cudapool::pool {

void DevicePool::empty_cache() {
  release_cached_blocks();
  emit(Action::kEmptyCache, 0, 0, 0, 0, 0);
}

void DevicePool::release_idle_segments() {
  process_fences();
  release_blocks(large_);
  release_blocks(small_);
  emit(Action::kEmptyCache, 0, 0, 0, 0, 0);
}

bool DevicePool::release_available_cached_blocks(const Request& r) {
  const std::size_t max_split = options_.max_split_size;
  if (shadows_ != nullptr) shadows_->releasing_oversize(max_split);
  if (max_split == std::numeric_limits<std::size_t>::max()) return false;
  BlockPool& pool = *r.pool;
  Block key = sort_key(r.stream, r.size < max_split ? max_split : r.size);

  // Only a whole segment goes back. An oversize free block is one with the usual settings, but
  // a large_segment_size above max_split_size makes segments that requests below the limit split,
  // leaving free pieces at or above it (PyTorch would cudaFree such a piece's interior pointer).
  const auto releasable = [](const Block* b) { return b->expandable == nullptr && !b->is_split(); };
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != r.stream || !releasable(*it)) {
    // No single oversize block is large enough: free oversize blocks from the largest down
    // until as many bytes as the request are released.
    if (it == pool.blocks.begin()) return false;
    std::size_t released = 0;
    --it;
    while (released < key.size && (*it)->size >= max_split && (*it)->stream == r.stream) {
      auto current = it;
      const bool is_first = current == pool.blocks.begin();
      if (!is_first) --it;
      if (releasable(*current)) {
        released += (*current)->size;
        release_block(*current);
      }
      if (is_first) break;
    }
    return released >= key.size;
  }
  release_block(*it);
  return true;
}

void DevicePool::release_cached_blocks() {
  wait_all_fences();
  release_blocks(large_);
  release_blocks(small_);
}

void DevicePool::release_block(Block* block) {
  stats_.num_device_free += 1;
  emit(Action::kSegmentFree, block->ptr, block->size, block->size, block->segment, block->stream);
  backend_.free_segment(block->ptr, block->size);
  reserved_ -= block->size;
  update(*block->pool, [&](std::size_t t) {
    stats_.segment[t].decrease(1);
    stats_.reserved_bytes[t].decrease(block->size);
  });
  if (block->size >= options_.max_split_size) stats_.oversize_segments.decrease(1);
  erase_block(block->pool->blocks, block);
  delete_block(block);
}

void DevicePool::release_blocks(BlockPool& pool) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* block = *it;
    ++it;
    if (block->expandable != nullptr) {
      to_unmap.push_back(block);  // unmapping changes the set: do it after the walk
    } else if (!block->is_split()) {
      release_block(block);
    }
  }
  for (Block* block : to_unmap) {
    unmap_block(block);
    if (!block->is_split() && !block->mapped) release_expandable_segment(block);
  }
}

void DevicePool::garbage_collect_cached_blocks() {
  // Frees whole idle large-pool segments, those idle longest (counted in cache lookups) first,
  // until reserved memory is back under threshold * allowed memory.
  const auto threshold = static_cast<std::size_t>(options_.garbage_collection_threshold *
                                                  static_cast<double>(*allowed_memory_));
  if (reserved_ <= threshold) return;
  const std::size_t target = reserved_ - threshold;
  std::size_t reclaimed = 0;

  auto age = [&](const Block* b) {
    return static_cast<std::size_t>(static_cast<int>(large_.lookups - b->gc_count_base));
  };
  std::size_t total_age = 0;
  int freeable = 0;
  for (const Block* b : large_.blocks) {
    if (!b->is_split()) {
      total_age += age(b);
      ++freeable;
    }
  }
  if (freeable == 0) return;

  bool freed_one = true;
  while (reclaimed < target && freed_one && freeable > 0) {
    const double age_threshold = static_cast<double>(total_age) / freeable;
    freed_one = false;
    for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
      Block* block = *it;
      ++it;
      if (!block->is_split() && block->expandable == nullptr &&
          static_cast<double>(age(block)) >= age_threshold) {
        freed_one = true;
        reclaimed += block->size;
        total_age -= age(block);
        --freeable;
        release_block(block);
      }
    }
  }
}

void DevicePool::process_fences() {
  if (pending_.empty()) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    PendingFence p = pending_[i];
    if (backend_.fence_passed(p.fence)) {
      backend_.fence_release(p.fence);
      p.block->fence = 0;
      free_block(p.block);
    } else {
      pending_[kept++] = p;
    }
  }
  pending_.resize(kept);
}

void DevicePool::wait_for_fenced_blocks(const Request& r) {
  // The fenced blocks of the request's pool, oldest first, until their bytes could cover it (they
  // may merge with free neighbours, so this is a hope, not a promise: the wait is bounded).
  std::size_t bytes = 0;
  std::uint64_t fence = 0;
  for (const PendingFence& p : pending_) {
    if (p.block->pool != r.pool || p.block->stream != r.stream) continue;
    bytes += p.block->size;
    fence = p.fence;
    if (bytes >= r.size) break;
  }
  if (bytes < r.size || fence == 0) return;
  // After a wait ran out, none again until the oldest fence changed (a long kernel holds them).
  if (pending_.front().fence == fence_wait_gave_up_) return;
  // What a new segment would cost: cudaMalloc took 62-73 us up to 8 MiB and 2.4 ms for 1 GiB on
  // the H200 (docs/benchmarks.md); waiting longer than that saves memory but costs time.
  const std::uint64_t budget_ns = 60000 + r.alloc_size / 450;
  if (backend_.fence_wait_for(fence, budget_ns)) {
    process_fences();
  } else {
    fence_wait_gave_up_ = pending_.front().fence;
  }
}

void DevicePool::wait_all_fences() {
  stats_.num_sync_all_streams += 1;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    PendingFence p = pending_[i];
    if (!backend_.fence_wait(p.fence)) {
      pending_[kept++] = p;  // cannot wait now: the block stays fenced
      continue;
    }
    backend_.fence_release(p.fence);
    p.block->fence = 0;
    free_block(p.block);
  }
  pending_.resize(kept);
}

}  // namespace cudapool::pool
