// SPDX-License-Identifier: Apache-2.0
// pool/rounding.cpp: see rounding.h.
#include "pool/rounding.h"

#include <bit>

#include "pool/constants.h"

namespace cudapool::pool {

namespace {
constexpr unsigned kFirstIntervalLog2 = 20;  // 1 MiB
}

std::size_t divisions_for(std::size_t size, const config::Options& options) {
  const unsigned log_size = size == 0 ? 0 : static_cast<unsigned>(std::bit_width(size) - 1);
  std::size_t index = log_size > kFirstIntervalLog2 ? log_size - kFirstIntervalLog2 : 0;
  if (index > config::kRoundupIntervals - 1) index = config::kRoundupIntervals - 1;
  return options.roundup_power2_divisions[index];
}

std::size_t round_to_power2_division(std::size_t size, std::size_t divisions) {
  if (std::has_single_bit(size)) return size;
  const std::size_t floor = std::bit_floor(size);
  // divisions is a power of two here; a step is floor / divisions.
  const std::size_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) return floor << 1;
  const std::size_t below = size & ~(step - 1);
  return below == size ? size : below + step;
}

std::size_t round_size(std::size_t size, const config::Options& options) {
  if (size < kMinBlockSize) return kMinBlockSize;
  const std::size_t divisions = divisions_for(size, options);
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    return round_to_power2_division(size, divisions);
  }
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

std::size_t segment_size_for(std::size_t rounded, const config::Options& options) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return options.large_segment_size;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

std::size_t large_handle_pages(const config::Options& options) {
  const std::size_t pages = options.expandable_handle / options.large_segment_size;
  return pages > 1 ? pages : 1;
}

}  // namespace cudapool::pool
