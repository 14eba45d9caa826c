// SPDX-License-Identifier: Apache-2.0
// pool/allocated_blocks.h: the pool's allocated blocks, kept one of two ways. By address (the
// shim's way): a hash map from the block's address to the block, because a program frees by
// address. By handle (the replay's way): the caller keeps the Block* that malloc handed it and
// frees with it, so no lookup by address is needed on the common path; the blocks sit in a slot
// table (the block knows its slot; freed slots are reused) that only enumeration reads. The hash
// map's insert and erase were about 12% of tune's CPU time on a training log (docs/benchmarks.md).
// By handle, a lookup by address is a walk over the table: for checks and error reports, never
// for the replay's common path. Not: the pool's policy, thread safety (the pool's lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pool/block.h"
#include "pool/ptr_map.h"

namespace cudapool::pool {

// How a pool's user frees: by the block's address (DevicePool::free) or by the handle malloc
// returned (DevicePool::free_handle).
enum class Tracking : std::uint8_t { kByAddress, kByHandle };

class AllocatedBlocks {
 public:
  explicit AllocatedBlocks(Tracking tracking) : tracking_(tracking) {}

  Tracking tracking() const { return tracking_; }

  void insert(Block* block) {
    if (tracking_ == Tracking::kByAddress) {
      by_address_.insert(block->ptr, block);
      return;
    }
    if (free_slots_.empty()) {
      block->slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back(block);
    } else {
      block->slot = free_slots_.back();
      free_slots_.pop_back();
      slots_[block->slot] = block;
    }
  }

  // The block allocated at `ptr`, removed; nullptr when none.
  Block* erase(std::uintptr_t ptr) {
    if (tracking_ == Tracking::kByAddress) return by_address_.erase(ptr);
    Block* block = find(ptr);
    if (block != nullptr) erase(block);
    return block;
  }

  // Removes a block known to be allocated here (by handle).
  void erase(Block* block) {
    if (tracking_ == Tracking::kByAddress) {
      by_address_.erase(block->ptr);
      return;
    }
    slots_[block->slot] = nullptr;
    free_slots_.push_back(block->slot);
  }

  // Whether `block` is one of the allocated blocks.
  bool holds(const Block* block) const {
    if (tracking_ == Tracking::kByAddress) return by_address_.find(block->ptr) == block;
    return block->slot < slots_.size() && slots_[block->slot] == block;
  }

  Block* find(std::uintptr_t ptr) const {
    if (tracking_ == Tracking::kByAddress) return by_address_.find(ptr);
    for (Block* b : slots_) {
      if (b != nullptr && b->ptr == ptr) return b;
    }
    return nullptr;
  }

  template <class Fn>
  void for_each(Fn&& fn) const {
    if (tracking_ == Tracking::kByAddress) {
      by_address_.for_each([&](std::uintptr_t, Block* b) { fn(b); });
      return;
    }
    for (Block* b : slots_) {
      if (b != nullptr) fn(b);
    }
  }

  void clear() {
    by_address_.clear();
    slots_ = {};
    free_slots_ = {};
  }

 private:
  Tracking tracking_;
  PtrMap by_address_;
  std::vector<Block*> slots_;  // by handle: the blocks by slot, nullptr where free
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace cudapool::pool
