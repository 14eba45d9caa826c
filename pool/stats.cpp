// SPDX-License-Identifier: Apache-2.0
// pool/stats.cpp: the statistics by name and the sum of two pools (see stats.h), from
// pool/stats.def.
#include "pool/stats.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace cudapool::pool {

namespace {

void add_into(Stat& into, const Stat& from) {
  into.current += from.current;
  into.peak += from.peak;
  into.allocated += from.allocated;
  into.freed += from.freed;
}

void add_into(StatArray& into, const StatArray& from) {
  for (std::size_t type = 0; type < kStatTypes; ++type) add_into(into[type], from[type]);
}

void combine_sum(std::int64_t& into, std::int64_t from) {
  into += from;
}

void combine_keep(std::int64_t&, std::int64_t) {}

constexpr std::array<std::string_view, kStatTypes> kTypeNames = {"all", "small_pool", "large_pool"};

void add_stat(std::vector<std::pair<std::string, std::int64_t>>& out, std::string_view prefix,
              const Stat& stat) {
  const std::string base(prefix);
  out.emplace_back(base + ".current", stat.current);
  out.emplace_back(base + ".peak", stat.peak);
  out.emplace_back(base + ".allocated", stat.allocated);
  out.emplace_back(base + ".freed", stat.freed);
}

void add_array(std::vector<std::pair<std::string, std::int64_t>>& out, std::string_view name,
               const StatArray& array) {
  for (std::size_t type = 0; type < kStatTypes; ++type) {
    add_stat(out, std::string(name) + "." + std::string(kTypeNames[type]), array[type]);
  }
}

}  // namespace

void add_pool_stats(DeviceStats& into, const DeviceStats& from) {
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning) add_into(into.member, from.member);
#define CUDAPOOL_STAT_SINGLE(member, label, meaning) add_into(into.member, from.member);
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning) combine_##combine(into.member, from.member);
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
}

void for_each_stat(const DeviceStats& stats,
                   const std::function<void(std::string_view, std::int64_t)>& fn) {
  std::vector<std::pair<std::string, std::int64_t>> all;
  all.reserve(128);
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning) add_array(all, #member, stats.member);
#define CUDAPOOL_STAT_SINGLE(member, label, meaning) add_stat(all, #member, stats.member);
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning) all.emplace_back(#member, stats.member);
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
  std::sort(all.begin(), all.end());
  for (const auto& [name, value] : all) fn(name, value);
}

}  // namespace cudapool::pool
