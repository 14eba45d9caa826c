// pool/ptr_map.h: an open-addressing hash map from a device address to its allocated Block, so a
// free finds its block without touching the heap. Linear probing with backward-shift deletion;
// grows (the only heap use) when more than half full. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pool/block.h"

namespace cudapool::pool {

class PtrMap {
 public:
  PtrMap() : slots_(kInitialSlots) {}

  Block* find(std::uintptr_t key) const {
    if (key == 0) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return slot.block;
      if (slot.key == 0) return nullptr;
    }
  }

  // Inserts or replaces.
  void insert(std::uintptr_t key, Block* block) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    place(key, block);
  }

  // Removes and returns the block for key, or nullptr.
  Block* erase(std::uintptr_t key) {
    if (key == 0) return nullptr;
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask()) {
      if (slots_[i].key == key) break;
      if (slots_[i].key == 0) return nullptr;
    }
    Block* found = slots_[i].block;
    // Backward shift: move later members of the probe run into the hole.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask(); slots_[j].key != 0; j = (j + 1) & mask()) {
      const std::size_t want = home(slots_[j].key);
      const bool movable = hole <= j ? (want <= hole || want > j) : (want <= hole && want > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --count_;
    return found;
  }

  std::size_t size() const { return count_; }

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.key != 0) fn(slot.key, slot.block);
    }
  }

  // Empties the map and gives its grown table back to the heap.
  void clear() {
    std::vector<Slot>(kInitialSlots).swap(slots_);
    count_ = 0;
    shift_ = 64 - kInitialLog2;
  }

 private:
  struct Slot {
    std::uintptr_t key = 0;
    Block* block = nullptr;
  };
  // Small: a pool per context, and a process may go through many contexts; a busy pool grows
  // its table a few times early on.
  static constexpr unsigned kInitialLog2 = 4;
  static constexpr std::size_t kInitialSlots = std::size_t{1} << kInitialLog2;

  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(std::uintptr_t key) const {
    // Addresses are 512-byte aligned: drop the low bits, then Fibonacci hashing (top bits).
    return static_cast<std::size_t>(((key >> 9) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void place(std::uintptr_t key, Block* block) {
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) {
        slots_[i].block = block;
        return;
      }
      if (slots_[i].key == 0) {
        slots_[i] = Slot{key, block};
        ++count_;
        return;
      }
    }
  }
  void grow() {
    --shift_;
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    count_ = 0;
    for (const Slot& slot : old) {
      if (slot.key != 0) place(slot.key, slot.block);
    }
  }

  std::vector<Slot> slots_;
  std::size_t count_ = 0;
  unsigned shift_ = 64 - kInitialLog2;  // 64 - log2(slots_.size())
};

}  // namespace cudapool::pool
