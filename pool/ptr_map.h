// SPDX-License-Identifier: Apache-2.0
// pool/ptr_map.h: the project's one open-addressing hash map from a 64-bit key to a small value,
// so that a lookup never touches the heap: PtrMap (the pool's device address -> allocated Block,
// key 0 reserved) and, in tools/replay, a logged pointer -> the replay's pointer (any key but ~0).
// Linear probing with backward-shift deletion (no tombstones); grows (the only heap use) when more
// than half full. The value type's default (nullptr, 0) means absent, so it is never stored.
// Not thread-safe, not ordered, not a general container (no iterators; only clear() shrinks it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pool/block.h"

namespace cudapool::pool {

// Key rules of a ProbeMap: the reserved key that marks an empty slot (never a member: finding
// or erasing it finds nothing, inserting it is the caller's error), the initial table size, and
// the hash, which gives the top `64 - shift` bits as the key's home slot.
struct DeviceAddressKeys {
  static constexpr std::uint64_t kEmpty = 0;
  // Small: a pool per context, and a process may go through many contexts; a busy pool grows
  // its table a few times early on.
  static constexpr unsigned kInitialLog2 = 4;
  static std::size_t home(std::uint64_t key, unsigned shift) {
    // Addresses are 512-byte aligned: drop the low bits, then Fibonacci hashing (top bits).
    return static_cast<std::size_t>(((key >> 9) * 0x9E3779B97F4A7C15ull) >> shift);
  }
};

// Any 64-bit key but ~0, aligned or not (a log's pointers, 0 included).
struct AnyKeys {
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static constexpr unsigned kInitialLog2 = 10;
  static std::size_t home(std::uint64_t key, unsigned shift) {
    std::uint64_t x = key;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return static_cast<std::size_t>(x >> shift);
  }
};

template <class Value, class Keys>
class ProbeMap {
 public:
  ProbeMap() : slots_(kInitialSlots) {}

  // Value for key, or Value{}.
  Value find(std::uint64_t key) const {
    if (key == Keys::kEmpty) return Value{};
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return slot.value;
      if (slot.key == Keys::kEmpty) return Value{};
    }
  }

  bool contains(std::uint64_t key) const { return find(key) != Value{}; }

  // Inserts or replaces; key is not Keys::kEmpty and value is not Value{}.
  void insert(std::uint64_t key, Value value) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    place(key, value);
  }

  // Makes key a member when it is not (key is not Keys::kEmpty), in one probe where find() and
  // insert() make two: its value, which the caller sets to one that is not Value{} before any
  // other call (or erases key again); null when key is a member already.
  Value* claim(std::uint64_t key) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return nullptr;
      if (slots_[i].key == Keys::kEmpty) {
        slots_[i].key = key;
        ++count_;
        return &slots_[i].value;
      }
    }
  }
  // Removes and returns the value for key, or Value{}.
  Value erase(std::uint64_t key) {
    if (key == Keys::kEmpty) return Value{};
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask()) {
      if (slots_[i].key == key) break;
      if (slots_[i].key == Keys::kEmpty) return Value{};
    }
    const Value found = slots_[i].value;
    // Backward shift: move later members of the probe run into the hole.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask(); slots_[j].key != Keys::kEmpty; j = (j + 1) & mask()) {
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
  std::size_t slot_count() const { return slots_.size(); }  // the table's size, for tests

  // fn(key, value) for each member, in table order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.key != Keys::kEmpty) fn(slot.key, slot.value);
    }
  }

  // Empties the map and gives its grown table back to the heap.
  void clear() {
    std::vector<Slot>(kInitialSlots).swap(slots_);
    count_ = 0;
    shift_ = 64 - Keys::kInitialLog2;
  }

 private:
  struct Slot {
    std::uint64_t key = Keys::kEmpty;
    Value value{};
  };
  static constexpr std::size_t kInitialSlots = std::size_t{1} << Keys::kInitialLog2;

  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(std::uint64_t key) const { return Keys::home(key, shift_); }
  void place(std::uint64_t key, Value value) {
    for (std::size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) {
        slots_[i].value = value;
        return;
      }
      if (slots_[i].key == Keys::kEmpty) {
        slots_[i] = Slot{key, value};
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
      if (slot.key != Keys::kEmpty) place(slot.key, slot.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t count_ = 0;
  unsigned shift_ = 64 - Keys::kInitialLog2;  // 64 - log2(slots_.size())
};

// A free finds its block by address without touching the heap.
using PtrMap = ProbeMap<Block*, DeviceAddressKeys>;

}  // namespace cudapool::pool
