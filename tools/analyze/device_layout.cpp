// SPDX-License-Identifier: Apache-2.0
// tools/analyze/device_layout.cpp: see device_layout.h.
#include "tools/analyze/device_layout.h"

#include "log/record.h"

namespace cudapool::analyze {

namespace {
using A = log::LogAction;
MapKey address(std::uint64_t ptr) {
  return MapKey{true, ptr};
}
}  // namespace

bool changes_state(int action) {
  switch (action) {
    case action_id(A::kAlloc):
    case action_id(A::kFreeRequested):
    case action_id(A::kFreeCompleted):
    case action_id(A::kSegmentAlloc):
    case action_id(A::kSegmentFree):
    case action_id(A::kSegmentMap):
    case action_id(A::kSegmentUnmap):
    case action_id(A::kContextDropped):
      return true;
    default:
      return false;
  }
}

void SiteHeld::apply(const Op& op) {
  if (op.index >= held.size()) held.resize(op.index + 1);
  held[op.index].first += op.count;
  held[op.index].second += op.bytes;
}

int DeviceLayout::tag(const MapKey& key) const {
  const auto it = tags_.find(key);
  return it == tags_.end() ? 0 : it->second;
}

void DeviceLayout::hold(std::int32_t site, std::int64_t count, Figure bytes) {
  const SiteHeld::Op op{static_cast<std::uint32_t>(site + 1), count, bytes};
  held_.apply(op);
  allocated_.record(op, held_.size());
}

void DeviceLayout::emit(const LayoutOp& op) {
  const LayoutBlock* old = nullptr;
  if (op.type == LayoutOp::kSetBlock || op.type == LayoutOp::kEraseBlock ||
      op.type == LayoutOp::kFence) {
    old = live_.block(op.at);
    if (old != nullptr && !old->fenced) hold(old->site, -1, -static_cast<Figure>(old->block_size));
    if (op.type == LayoutOp::kSetBlock) hold(op.block.site, 1, op.block.block_size);
  }
  live_.apply(op);
  reserved_.record(op, live_.size());
}

void DeviceLayout::event(const Event& e, std::int32_t site) {
  const MapKey segment_key{e.has_segment, e.segment};
  if (!changes_state(e.action)) return;
  if (e.ctx != 0)
    tags_[e.action == action_id(A::kSegmentMap) ? segment_key : address(e.ptr)] = e.ctx;
  LayoutOp op;
  op.at = e.ptr;
  switch (e.action) {
    case action_id(A::kAlloc):
      op.type = LayoutOp::kSetBlock;
      op.block = LayoutBlock{e.block_size, e.size, e.seq, site, false};
      return emit(op);
    case action_id(A::kFreeRequested): {
      const LayoutBlock* b = live_.block(e.ptr);
      if (b == nullptr || b->fenced) return;
      op.type = LayoutOp::kFence;
      return emit(op);
    }
    case action_id(A::kFreeCompleted):
      if (live_.block(e.ptr) == nullptr) return;
      op.type = LayoutOp::kEraseBlock;
      return emit(op);
    case action_id(A::kSegmentAlloc):
      op.type = LayoutOp::kSetSegment;
      op.end = e.size;
      return emit(op);
    case action_id(A::kSegmentFree):
      op.type = LayoutOp::kEraseSegment;
      return emit(op);
    case action_id(A::kSegmentMap):
      op.type = LayoutOp::kAddRange;
      op.key = segment_key;
      op.end = UFigure(e.ptr) + e.size;
      return emit(op);
    case action_id(A::kSegmentUnmap):
      op.type =
          live_.has_ranges(segment_key) ? LayoutOp::kRemoveRange : LayoutOp::kRemoveRangeEverywhere;
      op.key = segment_key;
      op.end = UFigure(e.ptr) + e.size;
      return emit(op);
    case action_id(A::kContextDropped): {  // the driver took every block and segment of the context
      std::vector<LayoutOp> gone;
      live_.for_each_block([&](std::uint64_t ptr, const LayoutBlock&) {
        if (tag(address(ptr)) == e.ctx) {
          LayoutOp g;
          g.type = LayoutOp::kEraseBlock;
          g.at = ptr;
          gone.push_back(g);
        }
      });
      for (const std::uint64_t base : live_.segment_bases()) {
        if (tag(address(base)) == e.ctx) {
          LayoutOp g;
          g.type = LayoutOp::kEraseSegment;
          g.at = base;
          gone.push_back(g);
        }
      }
      for (const MapKey& key : live_.mapped_keys()) {
        if (tag(key) == e.ctx) {
          LayoutOp g;
          g.type = LayoutOp::kEraseMapped;
          g.key = key;
          gone.push_back(g);
        }
      }
      for (const LayoutOp& g : gone) emit(g);
      return;
    }
    default:
      return;
  }
}

}  // namespace cudapool::analyze
