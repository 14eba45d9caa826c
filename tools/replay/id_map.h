// tools/replay/id_map.h: an open-addressing hash map from a logged pointer to the replay's pointer
// (both 64-bit; key ~0 is reserved, value 0 means absent). Linear probing with backward-shift
// deletion; it exists because std::unordered_map's node allocations were a tenth of replay time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cudapool::replay {

class IdMap {
 public:
  IdMap() : slots_(1024) {}

  // Value for key, or 0.
  std::uint64_t find(std::uint64_t key) const {
    for (std::size_t i = home(key);; i = next(i)) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == kEmpty) return 0;
    }
  }

  bool contains(std::uint64_t key) const { return find(key) != 0; }

  // Inserts key -> value (value != 0); replaces an existing value.
  void insert(std::uint64_t key, std::uint64_t value) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    place(key, value);
  }

  // Removes key; returns its value or 0.
  std::uint64_t erase(std::uint64_t key) {
    std::size_t i = home(key);
    for (;; i = next(i)) {
      if (slots_[i].key == key) break;
      if (slots_[i].key == kEmpty) return 0;
    }
    const std::uint64_t value = slots_[i].value;
    std::size_t hole = i;
    for (std::size_t j = next(i); slots_[j].key != kEmpty; j = next(j)) {
      const std::size_t want = home(slots_[j].key);
      const bool movable = hole <= j ? (want <= hole || want > j) : (want <= hole && want > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --count_;
    return value;
  }

  std::size_t size() const { return count_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key = kEmpty;
    std::uint64_t value = 0;
  };
  std::size_t home(std::uint64_t key) const {
    std::uint64_t x = key;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<std::size_t>(x) & (slots_.size() - 1);
  }
  std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void place(std::uint64_t key, std::uint64_t value) {
    for (std::size_t i = home(key);; i = next(i)) {
      if (slots_[i].key == key) {
        slots_[i].value = value;
        return;
      }
      if (slots_[i].key == kEmpty) {
        slots_[i] = Slot{key, value};
        ++count_;
        return;
      }
    }
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    count_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty) place(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t count_ = 0;
};

}  // namespace cudapool::replay
