// SPDX-License-Identifier: Apache-2.0
// tools/analyze/slab_map.h: a map from any 64-bit key (a log's pointer: every value is one, ~0
// included) to a record, for the engine's tables of live blocks: the records in a vector (slots
// reused after an erase), their places in pool/ptr_map.h's open-addressing ProbeMap, and the one
// key that map cannot hold (~0) beside it. Copyable (the peak copies of a layout, peak_copy.h).
// No order: callers that need one sort. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pool/ptr_map.h"

namespace cudapool::analyze {

template <class T>
class SlabMap {
 public:
  T* find(std::uint64_t key) {
    if (key == kReserved) return reserved_ ? &*reserved_ : nullptr;
    const std::uint32_t at = index_.find(key);
    return at == 0 ? nullptr : &records_[at - 1].value;
  }
  const T* find(std::uint64_t key) const { return const_cast<SlabMap*>(this)->find(key); }

  // The record of key, made (value-initialized) when absent.
  T& get(std::uint64_t key) {
    if (T* found = find(key)) return *found;
    if (key == kReserved) {
      reserved_.emplace();
      return *reserved_;
    }
    std::uint32_t at;
    if (!free_.empty()) {
      at = free_.back();
      free_.pop_back();
      records_[at - 1] = Record{key, T{}};
    } else {
      records_.push_back(Record{key, T{}});
      at = static_cast<std::uint32_t>(records_.size());
    }
    index_.insert(key, at);
    return records_[at - 1].value;
  }

  bool erase(std::uint64_t key) {
    if (key == kReserved) {
      const bool had = reserved_.has_value();
      reserved_.reset();
      return had;
    }
    const std::uint32_t at = index_.erase(key);
    if (at == 0) return false;
    records_[at - 1].value = T{};
    free_.push_back(at);
    return true;
  }

  std::size_t size() const { return index_.size() + (reserved_ ? 1 : 0); }

  // fn(key, record) for each member, in no particular order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    index_.for_each([&](std::uint64_t key, std::uint32_t at) { fn(key, records_[at - 1].value); });
    if (reserved_) fn(kReserved, *reserved_);
  }

  void clear() {
    index_.clear();
    records_.clear();
    free_.clear();
    reserved_.reset();
  }

 private:
  static constexpr std::uint64_t kReserved = ~std::uint64_t{0};
  struct Record {
    std::uint64_t key;
    T value;
  };
  pool::ProbeMap<std::uint32_t, pool::AnyKeys> index_;
  std::vector<Record> records_;
  std::vector<std::uint32_t> free_;
  std::optional<T> reserved_;
};

}  // namespace cudapool::analyze
