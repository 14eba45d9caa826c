// SPDX-License-Identifier: Apache-2.0
// tools/analyze/segment_map.cpp: see segment_map.h.
#include "tools/analyze/segment_map.h"

#include <algorithm>
#include <vector>

namespace cudapool::analyze {

void write_segment_map(JsonOut& out, const Layout& layout, bool free_on_request) {
  const std::vector<Region> regions = layout.regions();
  const std::vector<PlacedBlock> blocks = layout.sorted_blocks(free_on_request);
  const auto first_at = [&](UFigure at, std::size_t from) {
    return static_cast<std::size_t>(
        std::lower_bound(blocks.begin() + static_cast<std::ptrdiff_t>(from), blocks.end(), at,
                         [](const PlacedBlock& b, UFigure v) { return UFigure(b.ptr) < v; }) -
        blocks.begin());
  };
  const auto fenced = [&](const PlacedBlock& b) { return !free_on_request && b.block.fenced; };
  std::vector<Region> shown = regions;
  if (regions.size() > kMaxRegions) {
    std::sort(shown.begin(), shown.end(), [](const Region& x, const Region& y) {
      const UFigure sx = x.end - x.start, sy = y.end - y.start;
      return sx != sy ? sx > sy : x.start < y.start;
    });
    shown.resize(kMaxRegions);
    std::sort(shown.begin(), shown.end());
  }
  Figure reserved = 0, allocated = 0, fenced_total = 0;
  std::int64_t inside = 0, listed_blocks = 0;
  for (const Region& r : regions) {
    const std::size_t i = first_at(r.start, 0), j = first_at(r.end, i);
    inside += static_cast<std::int64_t>(j - i);
    reserved += static_cast<Figure>(r.end - r.start);
    listed_blocks += static_cast<std::int64_t>(j - i);
    for (std::size_t k = i; k < j; ++k) {
      (fenced(blocks[k]) ? fenced_total : allocated) += blocks[k].block.block_size;
    }
  }
  out.key("reserved").num(reserved).key("allocated").num(allocated).key("fenced").num(fenced_total);
  out.key("blocks").num(static_cast<long long>(listed_blocks));
  out.key("regions").num(static_cast<std::uint64_t>(regions.size()));
  out.key("shown").num(static_cast<std::uint64_t>(shown.size()));
  out.key("outside").num(static_cast<long long>(static_cast<std::int64_t>(blocks.size()) - inside));
  out.key("region_list").begin_array();
  std::size_t budget = kMaxBlocks;
  for (const Region& r : shown) {
    const std::size_t i = first_at(r.start, 0), j = first_at(r.end, i);
    const bool listed = j - i <= budget;
    Figure region_allocated = 0, region_fenced = 0;
    UFigure largest = 0, cursor = r.start;
    for (std::size_t k = i; k < j; ++k) {
      const UFigure p = blocks[k].ptr, e = p + blocks[k].block.block_size;
      (fenced(blocks[k]) ? region_fenced : region_allocated) += blocks[k].block.block_size;
      if (p > cursor) largest = std::max(largest, p - cursor);
      cursor = std::max(cursor, e);
    }
    if (r.end > cursor) largest = std::max(largest, r.end - cursor);
    out.begin_object().key("at").str(hex_text(r.start)).key("segment").str(hex_text(r.seg));
    out.key("size").num(static_cast<Figure>(r.end - r.start)).key("allocated").num(region_allocated);
    out.key("fenced").num(region_fenced).key("largest_free").num(static_cast<Figure>(largest));
    out.key("count").num(static_cast<std::uint64_t>(j - i)).key("blocks");
    if (listed) {
      out.begin_array();
      for (std::size_t k = i; k < j; ++k) {
        const LayoutBlock& b = blocks[k].block;
        out.begin_array().num(static_cast<Figure>(UFigure(blocks[k].ptr) - r.start));
        out.num(b.block_size).num(fenced(blocks[k]) ? 1 : 0).num(b.size).num(b.seq);
        out.num(b.site).end_array();
      }
      out.end_array();
      budget -= j - i;
    } else {
      out.null();
    }
    out.end_object();
  }
  out.end_array();
}

}  // namespace cudapool::analyze
