// pool/placement.cpp: see placement.h.
#include "pool/placement.h"

#include <iterator>

namespace cudapool::pool {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// Segments of at least kCoarseFrom take slots in kCoarse steps (seen for 60-256 MiB segments on
// the H200); smaller ones in 2 MiB steps.
constexpr std::size_t kCoarseFrom = 60 * kMiB;
constexpr std::size_t kCoarse = 32 * kMiB;
constexpr std::size_t kFine = 2 * kMiB;
constexpr std::size_t kSmallSegment = 2 * kMiB;

}  // namespace

DriverPlacement::DriverPlacement(std::uintptr_t base, std::uintptr_t span)
    : small_next_(base), large_next_(base + span) {}

std::size_t DriverPlacement::slot_size(std::size_t bytes) {
  return round_up(bytes, bytes >= kCoarseFrom ? kCoarse : kFine);
}

std::uintptr_t DriverPlacement::take_from(Region& r, std::size_t slot, bool highest) {
  if (highest) {
    for (auto it = r.free.rbegin(); it != r.free.rend(); ++it) {
      if (it->second < slot) continue;
      // The top of the free range.
      const std::uintptr_t start = it->first;
      const std::size_t size = it->second;
      const std::uintptr_t ptr = start + size - slot;
      r.free.erase(std::next(it).base());
      if (size > slot) r.free[start] = size - slot;
      return ptr;
    }
    return 0;
  }
  for (auto it = r.free.begin(); it != r.free.end(); ++it) {
    if (it->second < slot) continue;
    const std::uintptr_t ptr = it->first;
    const std::size_t size = it->second;
    r.free.erase(it);
    if (size > slot) r.free[ptr + slot] = size - slot;
    return ptr;
  }
  return 0;
}

void DriverPlacement::give_back(Region& r, std::uintptr_t ptr, std::size_t slot) {
  auto next = r.free.lower_bound(ptr);
  if (next != r.free.end() && next->first == ptr + slot) {
    slot += next->second;
    next = r.free.erase(next);
  }
  if (next != r.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == ptr) {
      prev->second += slot;
      return;
    }
  }
  r.free[ptr] = slot;
}

std::uintptr_t DriverPlacement::place(std::size_t bytes) {
  if (bytes <= kSmallSegment) {
    const std::size_t slot = round_up(bytes, kFine);
    if (const std::uintptr_t p = take_from(small_, slot, false)) return p;
    const std::uintptr_t p = small_next_;
    small_next_ += slot;
    return p;
  }
  const std::size_t slot = slot_size(bytes);
  if (const std::uintptr_t p = take_from(large_, slot, true)) return p;
  large_next_ -= slot;
  return large_next_;
}

void DriverPlacement::release(std::uintptr_t ptr, std::size_t bytes) {
  if (bytes <= kSmallSegment) {
    give_back(small_, ptr, round_up(bytes, kFine));
  } else {
    give_back(large_, ptr, slot_size(bytes));
  }
}

}  // namespace cudapool::pool
