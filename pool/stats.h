// SPDX-License-Identifier: Apache-2.0
// pool/stats.h: the allocator statistics, one struct per device, with the meaning and the names of
// PyTorch's torch.cuda.memory_stats(), listed once in pool/stats.def; printed as a table by
// summary.h and as flat name/value pairs by for_each_stat().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace cudapool::pool {

struct Stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;  // total ever added
  std::int64_t freed = 0;      // total ever removed

  void increase(std::size_t amount) {
    current += static_cast<std::int64_t>(amount);
    if (current > peak) peak = current;
    allocated += static_cast<std::int64_t>(amount);
  }
  void decrease(std::size_t amount) {
    current -= static_cast<std::int64_t>(amount);
    freed += static_cast<std::int64_t>(amount);
  }
  void reset_peak() { peak = current; }
  void reset_accumulated() { allocated = freed = 0; }
};

// Index of a StatArray: the whole device, or one of the two pools.
enum class StatType : std::uint8_t { kAll = 0, kSmallPool = 1, kLargePool = 2 };
inline constexpr std::size_t kStatTypes = 3;
using StatArray = std::array<Stat, kStatTypes>;

// The statistics of pool/stats.def.
struct DeviceStats {
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning) StatArray member;
#define CUDAPOOL_STAT_SINGLE(member, label, meaning) Stat member;
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning) std::int64_t member = 0;
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
};

// Adds the statistics of another pool of the same device (a second CUDA context) into `into`:
// every value is summed, peaks too (so a peak is an upper bound: the pools' peaks need not
// coincide); max_split_size is kept.
void add_pool_stats(DeviceStats& into, const DeviceStats& from);

// Calls fn(name, value) for every statistic under its torch.cuda.memory_stats() name, in
// PyTorch's (sorted) order, e.g. "allocated_bytes.all.peak".
void for_each_stat(const DeviceStats& stats,
                   const std::function<void(std::string_view, std::int64_t)>& fn);

}  // namespace cudapool::pool
