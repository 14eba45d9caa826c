// SPDX-License-Identifier: Apache-2.0
// pool/placement.cpp: see placement.h.
#include "pool/placement.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace cudapool::pool {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kSegmentStep = 2 * kMiB;
constexpr std::size_t kChunkStep = 32 * kMiB;
// The driver's own free ranges above the chunks when PyTorch's first segment comes (H200).
constexpr struct {
  std::size_t offset, size;
} kDriverRanges[] = {{414 * kMiB, 2 * kMiB}, {488 * kMiB, 24 * kMiB}};

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// Adds [ptr, ptr + size) to a map of merged free ranges; returns the merged range's start.
std::uintptr_t add_range(std::map<std::uintptr_t, std::size_t>& ranges, std::uintptr_t ptr,
                         std::size_t size) {
  auto next = ranges.lower_bound(ptr);
  if (next != ranges.end() && next->first == ptr + size) {
    size += next->second;
    next = ranges.erase(next);
  }
  if (next != ranges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == ptr) {
      prev->second += size;
      return prev->first;
    }
  }
  ranges[ptr] = size;
  return ptr;
}

}  // namespace

DriverPlacement::DriverPlacement(std::uintptr_t ceiling, std::uintptr_t floor)
    : frontier_(ceiling / kChunkStep * kChunkStep), floor_(floor) {
  for (const auto& r : kDriverRanges) {
    Chunk c;
    c.start = frontier_ + r.offset;
    c.size = r.size;
    c.free[c.start] = c.size;
    c.largest_free = c.size;
    c.driver_own = true;
    driver_.push_back(c);
  }
}

std::size_t DriverPlacement::segment_size(std::size_t bytes) {
  return round_up(bytes == 0 ? 1 : bytes, kSegmentStep);
}

std::size_t DriverPlacement::chunk_size(std::size_t bytes) {
  return round_up(segment_size(bytes), kChunkStep);
}

bool DriverPlacement::fit(const Chunk& c, std::size_t size, std::uintptr_t* at) {
  // The smallest free range that fits; the lowest of equal ones (ascending walk, strict <).
  std::size_t best = 0;
  for (const auto& [start, free] : c.free) {
    if (free < size || (best != 0 && free >= best)) continue;
    best = free;
    *at = start;
  }
  return best != 0;
}

void DriverPlacement::take(Chunk& c, std::uintptr_t at, std::size_t size) {
  auto it = c.free.find(at);
  const std::size_t free = it->second;
  c.free.erase(it);
  if (free > size) c.free[at + size] = free - size;
  c.used += size;
  measure(c);
}

std::size_t DriverPlacement::room_class(std::size_t bytes) {
  const std::size_t k = bytes / kSegmentStep;
  return k < kRoomClasses ? k : kRoomClasses;
}

void DriverPlacement::measure(Chunk& c) {
  const std::size_t before = room_class(c.largest_free);
  c.largest_free = 0;
  for (const auto& [start, free] : c.free) c.largest_free = std::max(c.largest_free, free);
  if (c.driver_own) return;  // the driver's ranges are tried after every chunk: no class
  const std::size_t after = room_class(c.largest_free);
  if (before != after) by_room_[before].erase(c.age);
  by_room_[after].insert(c.age);
}

DriverPlacement::Chunk* DriverPlacement::newest_with_room(std::size_t size) {
  // Every chunk of a class above size's holds room for it; those of size's own class and of the
  // last are looked at, newest first, until one does.
  const std::size_t first = room_class(size);
  bool found = false;
  std::uint64_t newest = 0;
  for (std::size_t k = first; k <= kRoomClasses; ++k) {
    const std::set<std::uint64_t>& ages = by_room_[k];
    for (auto it = ages.rbegin(); it != ages.rend(); ++it) {
      if (found && *it < newest) break;  // none newer in this class
      const bool fits =
          (k != first && k != kRoomClasses) || chunks_.at(by_age_.at(*it)).largest_free >= size;
      if (fits) {
        newest = *it;
        found = true;
        break;
      }
    }
  }
  return found ? &chunks_.at(by_age_.at(newest)) : nullptr;
}

std::uintptr_t DriverPlacement::reserve(std::size_t chunk) {
  // The highest released range larger than the chunk (an exact fit is passed over), at its top.
  for (auto it = released_.rbegin(); it != released_.rend(); ++it) {
    if (it->second <= chunk) continue;
    const std::uintptr_t start = it->first;
    const std::size_t size = it->second - chunk;
    released_[start] = size;
    return start + size;
  }
  if (frontier_ < floor_ || frontier_ - floor_ < chunk || frontier_ - chunk == 0) return 0;
  frontier_ -= chunk;
  return frontier_;
}

void DriverPlacement::unreserve(std::uintptr_t start, std::size_t size) {
  const std::uintptr_t merged = add_range(released_, start, size);
  if (merged != frontier_) return;
  // Touches the free space below the lowest chunk: the frontier moves up.
  frontier_ += released_[merged];
  released_.erase(merged);
}

DriverPlacement::Chunk* DriverPlacement::owner(std::uintptr_t ptr) {
  auto it = chunks_.upper_bound(ptr);
  if (it != chunks_.begin()) {
    --it;
    if (ptr < it->second.start + it->second.size) return &it->second;
  }
  for (Chunk& c : driver_) {
    if (ptr >= c.start && ptr < c.start + c.size) return &c;
  }
  return nullptr;
}

std::uintptr_t DriverPlacement::place(std::size_t bytes) {
  const std::size_t size = segment_size(bytes);
  std::uintptr_t at = 0;
  if (Chunk* c = newest_with_room(size); c != nullptr && fit(*c, size, &at)) {
    take(*c, at, size);
    return at;
  }
  for (Chunk& c : driver_) {
    if (fit(c, size, &at)) {
      take(c, at, size);
      return at;
    }
  }
  Chunk c;
  c.size = chunk_size(bytes);
  c.start = reserve(c.size);
  if (c.start == 0) return 0;  // no room above the floor
  c.free[c.start] = c.size;
  c.age = next_age_++;
  take(c, c.start, size);
  by_age_[c.age] = c.start;
  const std::uintptr_t start = c.start;
  chunks_[start] = std::move(c);
  return start;
}

void DriverPlacement::release(std::uintptr_t ptr, std::size_t bytes) {
  Chunk* c = owner(ptr);
  if (c == nullptr) return;
  const std::size_t size = segment_size(bytes);
  add_range(c->free, ptr, size);
  c->used -= size;
  measure(*c);
  if (c->used != 0 || c->driver_own) return;
  const std::uintptr_t start = c->start;
  const std::size_t chunk = c->size;
  by_room_[room_class(c->largest_free)].erase(c->age);
  by_age_.erase(c->age);
  chunks_.erase(start);
  unreserve(start, chunk);
}

}  // namespace cudapool::pool
