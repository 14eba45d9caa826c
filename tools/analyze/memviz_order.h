// SPDX-License-Identifier: Apache-2.0
// tools/analyze/memviz_order.h: what the memory_viz trace's two files share (memviz_trace.cpp
// follows the events, memviz_write.cpp writes the engine's "memviz" object): the user_metadata
// texts of the entries the export adds (memviz.py's), and the insertion order of blocks and
// regions, as Python's dicts keep it (in_order). Not here: the trace (memviz_trace.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "tools/analyze/memviz_trace.h"

namespace cudapool::analyze::memviz_order {

// memviz.py's user_metadata texts (0: none).
inline constexpr const char* kMetas[] = {
    "", "context_dropped: the driver took this memory with its context",
    "implied: the log has no free for this block",
    "implied: the log has no free_requested for this block",
    "implied: the log has no free_completed for this block"};

// The keys of a map's values that keep, in insertion order (Python's dict order).
template <class Map, class Keep>
std::vector<std::uint64_t> in_order(const Map& m, Keep keep,
                                    std::uint64_t (*order)(const typename Map::mapped_type&)) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> found;
  for (const auto& [k, v] : m) {
    if (keep(v)) found.emplace_back(order(v), k);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::uint64_t> out;
  out.reserve(found.size());
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

inline std::uint64_t block_order(const MemvizTrace::Block& b) {
  return b.order;
}
inline std::uint64_t region_order(const std::shared_ptr<MemvizTrace::Region>& r) {
  return r->order;
}

}  // namespace cudapool::analyze::memviz_order
