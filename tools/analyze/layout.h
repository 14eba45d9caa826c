// SPDX-License-Identifier: Apache-2.0
// tools/analyze/layout.h: one device's segments and blocks, rebuilt from its events
// (docs/log-format.md "Who reads what", item 4; tests/oracle/layout.py and the block
// states of segmap.py's Detail): segments [base, base + size), the mapped pages of expandable
// segments joined into ranges, and the blocks (alloc .. free_completed) with their requested
// size, seq, allocation site and whether they are fenced (freed, their free_completed not yet
// come). A log without free_completed events lets blocks go at free_requested: such a layout is
// this one without its fenced blocks (free_on_request below), so one layout serves both readings
// and the choice is made at the end, when the log has told which it is. The layout changes by
// primitive operations (LayoutOp) so that peak_copy.h can keep it as it was at the reserved peak.
// Not here: the events' translation into operations (device_layout.h), drawing it (segment_map.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "tools/analyze/figure.h"
#include "tools/analyze/slab_map.h"

namespace cudapool::analyze {

struct LayoutBlock {
  std::uint64_t block_size = 0, size = 0, seq = 0;
  std::int32_t site = -1;  // sites.h id, -1: none
  bool fenced = false;
};

// The key of a run of mapped pages: its segment, or none (a segment_map without a segment).
struct MapKey {
  bool has = false;
  std::uint64_t segment = 0;
  bool operator<(const MapKey& o) const { return has != o.has ? !has : segment < o.segment; }
  bool operator==(const MapKey& o) const { return has == o.has && segment == o.segment; }
};

struct LayoutOp {
  enum Type : std::uint8_t {
    kSetBlock,
    kEraseBlock,
    kFence,
    kSetSegment,
    kEraseSegment,
    kAddRange,
    kRemoveRange,
    kRemoveRangeEverywhere,
    kEraseMapped,
  };
  Type type = kSetBlock;
  MapKey key;
  std::uint64_t at = 0;  // a block's or segment's address, a range's start
  UFigure end = 0;       // a range's end; a segment's size
  LayoutBlock block;
};

// A region: a segment, or a run of mapped pages, [start, end) in the segment seg.
struct Region {
  UFigure start, end;
  std::uint64_t seg;
  bool operator<(const Region& o) const {
    return start != o.start ? start < o.start : end != o.end ? end < o.end : seg < o.seg;
  }
};

struct PlacedBlock {
  std::uint64_t ptr;
  LayoutBlock block;
};

struct Gap {
  UFigure bytes = 0;
  bool found = false;
  UFigure at = 0;  // past 2^64 in a log whose blocks end there
  std::uint64_t seg = 0;
  std::size_t regions = 0;
};

class Layout {
 public:
  void apply(const LayoutOp& op);
  std::size_t size() const;

  const LayoutBlock* block(std::uint64_t ptr) const { return blocks_.find(ptr); }
  bool has_ranges(const MapKey& key) const { return mapped_.count(key) != 0; }
  // Calls fn(ptr, block) for each block, fn(base) for each segment, fn(key) for each mapped key.
  template <class Fn>
  void for_each_block(Fn&& fn) const {
    blocks_.for_each(fn);
  }
  std::vector<std::uint64_t> segment_bases() const;
  std::vector<MapKey> mapped_keys() const;

  // The regions, sorted.
  std::vector<Region> regions() const;
  // The blocks sorted by address; without the fenced ones when free_on_request.
  std::vector<PlacedBlock> sorted_blocks(bool free_on_request) const;
  // The largest range inside a region not covered by a block (layout.py largest_gap); with
  // covered, [covered->first, covered->second) counts as covered too (the reserved peak's own
  // new segment or pages: the layout as the request that set the peak found it).
  Gap largest_gap(bool free_on_request,
                  std::optional<std::pair<UFigure, UFigure>> covered = std::nullopt) const;

 private:
  SlabMap<LayoutBlock> blocks_;
  std::map<std::uint64_t, std::uint64_t> segments_;
  std::map<MapKey, std::map<UFigure, UFigure>> mapped_;  // start -> end, disjoint, not touching
  std::size_t ranges_ = 0;
};

}  // namespace cudapool::analyze
