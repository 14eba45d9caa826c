// pool/stats.cpp: the names of the statistics (see stats.h).
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
  for (auto member : {&DeviceStats::allocation, &DeviceStats::segment, &DeviceStats::active,
                      &DeviceStats::inactive_split, &DeviceStats::allocated_bytes,
                      &DeviceStats::reserved_bytes, &DeviceStats::active_bytes,
                      &DeviceStats::inactive_split_bytes, &DeviceStats::requested_bytes}) {
    add_into(into.*member, from.*member);
  }
  for (auto member :
       {&DeviceStats::num_alloc_retries, &DeviceStats::num_ooms, &DeviceStats::num_sync_all_streams,
        &DeviceStats::num_device_alloc, &DeviceStats::num_device_free}) {
    into.*member += from.*member;
  }
  add_into(into.oversize_allocations, from.oversize_allocations);
  add_into(into.oversize_segments, from.oversize_segments);
}

void for_each_stat(const DeviceStats& stats,
                   const std::function<void(std::string_view, std::int64_t)>& fn) {
  std::vector<std::pair<std::string, std::int64_t>> all;
  all.reserve(128);
  add_array(all, "active", stats.active);
  add_array(all, "active_bytes", stats.active_bytes);
  add_array(all, "allocated_bytes", stats.allocated_bytes);
  add_array(all, "allocation", stats.allocation);
  add_array(all, "inactive_split", stats.inactive_split);
  add_array(all, "inactive_split_bytes", stats.inactive_split_bytes);
  add_array(all, "requested_bytes", stats.requested_bytes);
  add_array(all, "reserved_bytes", stats.reserved_bytes);
  add_array(all, "segment", stats.segment);
  add_stat(all, "oversize_allocations", stats.oversize_allocations);
  add_stat(all, "oversize_segments", stats.oversize_segments);
  all.emplace_back("max_split_size", stats.max_split_size);
  all.emplace_back("num_alloc_retries", stats.num_alloc_retries);
  all.emplace_back("num_device_alloc", stats.num_device_alloc);
  all.emplace_back("num_device_free", stats.num_device_free);
  all.emplace_back("num_ooms", stats.num_ooms);
  all.emplace_back("num_sync_all_streams", stats.num_sync_all_streams);
  std::sort(all.begin(), all.end());
  for (const auto& [name, value] : all) fn(name, value);
}

}  // namespace cudapool::pool
