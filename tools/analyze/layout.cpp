// SPDX-License-Identifier: Apache-2.0
// tools/analyze/layout.cpp: see layout.h. The range rules are layout.py's add_range and
// remove_range, kept exactly: joined when they touch, split by an unmap (even one of no bytes).
#include "tools/analyze/layout.h"

#include <algorithm>

namespace cudapool::analyze {

namespace {

using Ranges = std::map<UFigure, UFigure>;

// layout.py add_range: [start, end) joined with every range it overlaps or touches.
std::size_t add_range(Ranges& r, UFigure start, UFigure end) {
  std::size_t removed = 0;
  auto i = r.lower_bound(start);
  if (i != r.begin() && std::prev(i)->second >= start) --i;
  while (i != r.end() && i->first <= end) {
    start = std::min(start, i->first);
    end = std::max(end, i->second);
    i = r.erase(i);
    ++removed;
  }
  r.emplace(start, end);
  return removed;
}

// layout.py remove_range: what of [start, end) the ranges cover goes; returns the change in
// their number.
long remove_range(Ranges& r, UFigure start, UFigure end) {
  long change = 0;
  auto i = r.lower_bound(start);
  if (i != r.begin() && std::prev(i)->second > start) --i;
  std::vector<std::pair<UFigure, UFigure>> kept;
  while (i != r.end() && i->first < end) {
    const auto [s, e] = *i;
    if (s < start) kept.emplace_back(s, start);
    if (e > end) kept.emplace_back(end, e);
    i = r.erase(i);
    --change;
  }
  for (const auto& [s, e] : kept) {
    r[s] = e;
    ++change;
  }
  return change;
}

}  // namespace

void Layout::apply(const LayoutOp& op) {
  switch (op.type) {
    case LayoutOp::kSetBlock:
      blocks_.get(op.at) = op.block;
      return;
    case LayoutOp::kEraseBlock:
      blocks_.erase(op.at);
      return;
    case LayoutOp::kFence:
      if (LayoutBlock* b = blocks_.find(op.at)) b->fenced = true;
      return;
    case LayoutOp::kSetSegment:
      segments_[op.at] = static_cast<std::uint64_t>(op.end);
      return;
    case LayoutOp::kEraseSegment:
      segments_.erase(op.at);
      return;
    case LayoutOp::kAddRange: {
      Ranges& r = mapped_[op.key];
      ranges_ += 1;
      ranges_ -= add_range(r, op.at, op.end);
      return;
    }
    case LayoutOp::kRemoveRange: {
      const auto it = mapped_.find(op.key);
      if (it != mapped_.end()) {
        ranges_ = static_cast<std::size_t>(static_cast<long>(ranges_) +
                                           remove_range(it->second, op.at, op.end));
      }
      return;
    }
    case LayoutOp::kRemoveRangeEverywhere:
      for (auto& [key, r] : mapped_) {
        ranges_ =
            static_cast<std::size_t>(static_cast<long>(ranges_) + remove_range(r, op.at, op.end));
      }
      return;
    case LayoutOp::kEraseMapped: {
      const auto it = mapped_.find(op.key);
      if (it != mapped_.end()) {
        ranges_ -= it->second.size();
        mapped_.erase(it);
      }
      return;
    }
  }
}

std::size_t Layout::size() const {
  return blocks_.size() + segments_.size() + mapped_.size() + ranges_;
}

std::vector<std::uint64_t> Layout::segment_bases() const {
  std::vector<std::uint64_t> out;
  out.reserve(segments_.size());
  for (const auto& [base, size] : segments_) out.push_back(base);
  return out;
}

std::vector<MapKey> Layout::mapped_keys() const {
  std::vector<MapKey> out;
  for (const auto& [key, r] : mapped_) out.push_back(key);
  return out;
}

std::vector<Region> Layout::regions() const {
  std::vector<Region> out;
  for (const auto& [base, size] : segments_) {
    if (size > 0) out.push_back(Region{base, UFigure(base) + size, base});
  }
  for (const auto& [key, r] : mapped_) {
    for (const auto& [s, e] : r) {
      out.push_back(Region{s, e, key.has ? key.segment : static_cast<std::uint64_t>(s)});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<PlacedBlock> Layout::sorted_blocks(bool free_on_request) const {
  std::vector<PlacedBlock> out;
  out.reserve(blocks_.size());
  blocks_.for_each([&](std::uint64_t ptr, const LayoutBlock& b) {
    if (!(free_on_request && b.fenced)) out.push_back(PlacedBlock{ptr, b});
  });
  std::sort(out.begin(), out.end(),
            [](const PlacedBlock& a, const PlacedBlock& b) { return a.ptr < b.ptr; });
  return out;
}

Gap Layout::largest_gap(bool free_on_request,
                        std::optional<std::pair<UFigure, UFigure>> covered) const {
  const std::vector<Region> regions = this->regions();
  std::vector<PlacedBlock> blocks = sorted_blocks(free_on_request);
  if (covered && covered->second > covered->first) {
    PlacedBlock pseudo{static_cast<std::uint64_t>(covered->first), LayoutBlock{}};
    pseudo.block.block_size = static_cast<std::uint64_t>(covered->second - covered->first);
    blocks.insert(std::upper_bound(blocks.begin(), blocks.end(), pseudo.ptr,
                                   [](std::uint64_t v, const PlacedBlock& b) { return v < b.ptr; }),
                  pseudo);
  }
  const auto end_of = [&](std::size_t i) {
    return UFigure(blocks[i].ptr) + blocks[i].block.block_size;
  };
  Gap g;
  g.regions = regions.size();
  for (const Region& r : regions) {
    UFigure cursor = r.start;
    std::size_t i = static_cast<std::size_t>(
        std::lower_bound(blocks.begin(), blocks.end(), r.start,
                         [](const PlacedBlock& b, UFigure v) { return UFigure(b.ptr) < v; }) -
        blocks.begin());
    if (i > 0 && end_of(i - 1) > r.start) cursor = end_of(i - 1);
    for (; i < blocks.size() && UFigure(blocks[i].ptr) < r.end; ++i) {
      const UFigure s = blocks[i].ptr, e = end_of(i);
      if (s > cursor && s - cursor > g.bytes) {
        g.bytes = s - cursor;
        g.found = true;
        g.at = cursor;
        g.seg = r.seg;
      }
      if (e > cursor) cursor = e;
    }
    if (r.end > cursor && r.end - cursor > g.bytes) {
      g.bytes = r.end - cursor;
      g.found = true;
      g.at = cursor;
      g.seg = r.seg;
    }
  }
  return g;
}

}  // namespace cudapool::analyze
