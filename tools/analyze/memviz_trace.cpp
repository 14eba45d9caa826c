// SPDX-License-Identifier: Apache-2.0
// tools/analyze/memviz_trace.cpp: see memviz_trace.h. Each function is its namesake in
// scripts/cudapool_analysis/memviz.py (Device), kept line for line. The object written:
// memviz_write.cpp.
#include "tools/analyze/memviz_trace.h"

#include <algorithm>

#include "tools/analyze/device_layout.h"
#include "tools/analyze/memviz_order.h"

namespace cudapool::analyze {

namespace {

using namespace memviz_order;

using A = log::LogAction;
using Wide = UFigure;  // an end address past 2^64 (Python's ints have no end)

constexpr std::uint8_t kDriverTook = 1, kNoFree = 2, kNoFreeRequested = 3, kNoFreeCompleted = 4;

// memviz.py MAPPED: what changes the state (device_layout.h), and oom.
bool mapped(int action) {
  return changes_state(action) || action == action_id(A::kOom);
}

using Ranges = std::vector<std::pair<Wide, Wide>>;

// layout.py add_range / remove_range: sorted disjoint [s, e) ranges, touching ones joined.
void add_range(Ranges& r, Wide start, Wide end) {
  auto i = std::lower_bound(r.begin(), r.end(), std::make_pair(start, start));
  if (i != r.begin() && std::prev(i)->second >= start) --i;
  auto j = i;
  while (j != r.end() && j->first <= end) {
    start = std::min(start, j->first);
    end = std::max(end, j->second);
    ++j;
  }
  i = r.erase(i, j);
  r.insert(i, {start, end});
}

void remove_range(Ranges& r, Wide start, Wide end) {
  auto i = std::lower_bound(r.begin(), r.end(), std::make_pair(start, start));
  if (i != r.begin() && std::prev(i)->second > start) --i;
  auto j = i;
  Ranges kept;
  while (j != r.end() && j->first < end) {
    if (j->first < start) kept.emplace_back(j->first, start);
    if (j->second > end) kept.emplace_back(end, j->second);
    ++j;
  }
  i = r.erase(i, j);
  r.insert(i, kept.begin(), kept.end());
}

}  // namespace

bool MemvizTrace::Region::covers(std::uint64_t start, Wide end) const {
  if (!expandable) return base <= start && end <= Wide{base} + size;
  auto i = std::upper_bound(ranges.begin(), ranges.end(), Wide{start},
                            [](Wide s, const auto& r) { return s < r.first; });
  if (i == ranges.begin()) return false;
  --i;
  return i->first <= start && end <= i->second;
}

MemvizTrace::Device& MemvizTrace::device(int dev) {
  if (const auto it = by_dev_.find(dev); it != by_dev_.end()) return *it->second;
  devices_.push_back(std::make_unique<Device>());
  devices_.back()->dev = dev;
  by_dev_[dev] = devices_.back().get();
  return *devices_.back();
}

void MemvizTrace::add(Device& d, const Entry& e) {
  if (max_entries_ == 0 || d.ring.size() < max_entries_) {
    d.ring.push_back(e);
  } else {
    d.ring[d.added % max_entries_] = e;
  }
  ++d.added;
}

MemvizTrace::Entry* MemvizTrace::entry(Device& d, std::int64_t n) {
  if (n < 0) return nullptr;
  const auto k = static_cast<std::uint64_t>(n);
  if (k + d.ring.size() < d.added) return nullptr;  // gone from the ring
  return &d.ring[max_entries_ == 0 ? k : k % max_entries_];
}

std::uint32_t MemvizTrace::stack(std::string_view raw, const PythonStack* python) {
  // The key: the backtrace's text, and after a byte no JSON text holds the Python stack's number.
  std::string key(raw);
  if (python != nullptr) key += '\0' + std::to_string(python->index);
  if (const auto it = stack_ids_.find(key); it != stack_ids_.end()) return it->second;
  Stack s;
  s.python = python != nullptr && !python->frames.empty() ? python : nullptr;
  const std::optional<JsonValue> v = raw.empty() ? std::nullopt : parse_json(raw);
  if (v && v->is_array() && !v->items.empty() &&
      std::all_of(v->items.begin(), v->items.end(),
                  [](const JsonValue& x) { return x.is_string(); })) {
    for (const JsonValue& x : v->items) s.native.push_back(x.text);
  }
  std::uint32_t id = 0;
  if (!s.native.empty() || s.python != nullptr) {
    id = static_cast<std::uint32_t>(stacks_.size());
    stacks_.push_back(std::move(s));
  }
  stack_ids_.emplace(std::move(key), id);
  return id;
}

std::shared_ptr<MemvizTrace::Region> MemvizTrace::region_of(
    Device& d, std::uint64_t start, Wide end, std::optional<std::uint64_t> seg) const {
  if (seg) {
    auto it = d.segments.find(*seg);
    std::shared_ptr<Region> r;
    if (it != d.segments.end()) {
      r = it->second;
    } else if (auto x = d.expandable.find(*seg); x != d.expandable.end()) {
      r = x->second;
    }
    return r && r->covers(start, end) ? r : nullptr;
  }
  const auto any = [](const std::shared_ptr<Region>&) { return true; };
  for (const auto* m : {&d.segments, &d.expandable}) {
    for (const std::uint64_t k : in_order(*m, any, region_order)) {
      const auto& r = m->at(k);
      if (r->covers(start, end)) return r;
    }
  }
  return nullptr;
}

void MemvizTrace::event(std::uint64_t, const Event& e, const DeviceState&) {
  if (!mapped(e.action)) {
    ++left_out_[std::string(e.action_name)];
    return;
  }
  Device& d = device(e.dev);
  const std::uint64_t stream = e.stream;
  const std::uint64_t t = e.t_ns;
  switch (e.action) {
    case action_id(A::kAlloc): {
      std::uint32_t frames = 0;
      const auto& bt = e.raw->backtrace;
      const bool listed = bt && bt->kind == replay::JsonKind::kNested && bt->value[0] == '[';
      if (listed || e.python != nullptr) frames = stack(listed ? bt->value : "", e.python);
      alloc(d, e, stream, frames);
      return;
    }
    case action_id(A::kFreeRequested):
    case action_id(A::kFreeCompleted):
      free(d, e.action == action_id(A::kFreeRequested), e.ptr, t);
      return;
    case action_id(A::kOom): {
      std::uint64_t device_free = 0;
      if (const auto& f = e.raw->figures[3]; f) {  // kOomFigureNames[3]: device_free
        std::string why;
        device_free = uint_field("device_free", *f, &why).value_or(0);
      }
      add(d, Entry{static_cast<std::uint8_t>(e.action), 0, 0, 0, device_free, e.size, stream, t});
      return;
    }
    case action_id(A::kContextDropped):
      drop_context(d, e.ctx, t);
      return;
    default:
      segment(d, e.action, e.ptr, e.size,
              e.has_segment ? std::optional<std::uint64_t>(e.segment) : std::nullopt, e.ctx, stream,
              t);
  }
}

void MemvizTrace::alloc(Device& d, const Event& e, std::uint64_t stream, std::uint32_t frames) {
  if (d.blocks.count(e.ptr) != 0) {
    ++d.count["alloc of an address still in use (its free implied)"];
    gone(d, e.ptr, e.t_ns, kNoFree);
  }
  std::shared_ptr<Region> region =
      region_of(d, e.ptr, Wide{e.ptr} + e.block_size,
                e.has_segment ? std::optional<std::uint64_t>(e.segment) : std::nullopt);
  if (!region) {
    ++d.count["alloc outside every segment (left out)"];
    return;
  }
  Block b;
  b.size = e.block_size;
  b.requested = e.size;
  b.frames = frames;
  b.ctx = e.ctx;
  b.stream = stream;
  b.order = ++order_;
  ++region->blocks;
  region->largest_block = std::max(region->largest_block, e.block_size);
  b.region = std::move(region);
  d.blocks[e.ptr] = std::move(b);
  add(d, Entry{static_cast<std::uint8_t>(e.action), 0, 0, frames, e.ptr, e.size, stream, e.t_ns});
}

void MemvizTrace::request_free(Device& d, std::uint64_t ptr, Block& b, std::uint64_t t,
                               std::uint8_t meta) {
  b.pending = true;
  b.free_entry = static_cast<std::int64_t>(d.added);
  add(d, Entry{static_cast<std::uint8_t>(A::kFreeRequested), meta, 0, b.frames, ptr, b.requested,
               b.stream, t});
}

void MemvizTrace::gone(Device& d, std::uint64_t ptr, std::uint64_t t, std::uint8_t meta,
                       bool at_request) {
  auto it = d.blocks.find(ptr);
  Block& b = it->second;
  const Entry completed{static_cast<std::uint8_t>(A::kFreeCompleted),
                        meta,
                        0,
                        b.frames,
                        ptr,
                        b.requested,
                        b.stream,
                        t};
  if (!b.pending) {
    request_free(d, ptr, b, t, meta);
    add(d, completed);
  } else if (!at_request) {
    add(d, completed);
  } else if (Entry* x = entry(d, b.free_entry); x != nullptr) {
    x->completed = static_cast<std::uint8_t>(1 + meta);  // completed right after its request
  }
  --b.region->blocks;
  d.blocks.erase(it);
}

void MemvizTrace::free(Device& d, bool requested, std::uint64_t ptr, std::uint64_t t) {
  auto it = d.blocks.find(ptr);
  if (it == d.blocks.end()) {
    ++d.count[requested ? "free_requested of a block not allocated (left out)"
                        : "free_completed of a block not allocated (left out)"];
    return;
  }
  Block& b = it->second;
  if (requested) {
    if (b.pending) {
      ++d.count["free_requested of a block already freed (left out)"];
      return;
    }
    ++d.free_requested;
    request_free(d, ptr, b, t, 0);
    return;
  }
  ++d.free_completed;
  if (!b.pending) {
    ++d.count["free_completed without free_requested (implied)"];
    request_free(d, ptr, b, t, kNoFreeRequested);
  }
  --b.region->blocks;
  const Entry done{
      static_cast<std::uint8_t>(A::kFreeCompleted), 0, 0, b.frames, ptr, b.requested, b.stream, t};
  d.blocks.erase(it);
  add(d, done);
}

void MemvizTrace::segment(Device& d, int action, std::uint64_t ptr, std::uint64_t size,
                          std::optional<std::uint64_t> seg, int ctx, std::uint64_t stream,
                          std::uint64_t t, std::uint8_t meta) {
  if (action == action_id(A::kSegmentAlloc)) {
    if (d.segments.count(ptr) != 0) {
      ++d.count["segment_alloc of a segment that exists (its free implied)"];
      segment(d, action_id(A::kSegmentFree), ptr, 0, std::nullopt, ctx, stream, t, kNoFree);
    }
    auto r = std::make_shared<Region>();
    r->base = ptr;
    r->size = r->first_map = size;
    r->stream = stream;
    r->ctx = ctx;
    r->order = ++order_;
    d.segments[ptr] = std::move(r);
    ++d.regions_seen;
  } else if (action == action_id(A::kSegmentFree)) {
    const auto it = d.segments.find(ptr);
    if (it == d.segments.end()) {
      ++d.count["segment_free of an unknown segment (left out)"];
      return;
    }
    const std::shared_ptr<Region> r = it->second;
    d.segments.erase(it);
    if (r->blocks != 0) {
      ++d.count["segment_free of a segment with blocks (their frees implied)"];
      const Region* raw = r.get();
      for (const std::uint64_t p : in_order(
               d.blocks, [raw](const Block& b) { return b.region.get() == raw; }, block_order)) {
        gone(d, p, t, kNoFree, false);
      }
    }
    size = r->size;
    stream = r->stream;
  } else if (action == action_id(A::kSegmentMap)) {
    const std::uint64_t base = seg ? *seg : ptr;
    auto& r = d.expandable[base];
    if (!r) {
      r = std::make_shared<Region>();
      r->base = base;
      r->size = r->first_map = size;
      r->stream = stream;
      r->ctx = ctx;
      r->expandable = true;
      r->order = ++order_;
    }
    ++d.regions_seen;
    add_range(r->ranges, ptr, Wide{ptr} + size);
    stream = r->stream;
  } else {  // segment_unmap
    std::shared_ptr<Region> r;
    if (seg) {
      if (const auto it = d.expandable.find(*seg); it != d.expandable.end()) r = it->second;
    } else {
      const auto any = [](const std::shared_ptr<Region>&) { return true; };
      for (const std::uint64_t k : in_order(d.expandable, any, region_order)) {
        if (d.expandable.at(k)->covers(ptr, Wide{ptr} + 1)) {
          r = d.expandable.at(k);
          break;
        }
      }
    }
    if (!r) {
      ++d.count["segment_unmap of an unknown range (left out)"];
      return;
    }
    remove_range(r->ranges, ptr, Wide{ptr} + size);
    stream = r->stream;
  }
  add(d, Entry{static_cast<std::uint8_t>(action), meta, 0, 0, ptr, size, stream, t});
}

void MemvizTrace::drop_context(Device& d, int ctx, std::uint64_t t) {
  ++d.count["context_dropped (its memory written as freed)"];
  for (const std::uint64_t p : in_order(
           d.blocks, [ctx](const Block& b) { return b.ctx == ctx; }, block_order)) {
    gone(d, p, t, kDriverTook, false);
  }
  const auto of_ctx = [ctx](const std::shared_ptr<Region>& r) { return r->ctx == ctx; };
  for (const std::uint64_t base : in_order(d.segments, of_ctx, region_order)) {
    const std::shared_ptr<Region> r = d.segments.at(base);
    d.segments.erase(base);
    add(d, Entry{static_cast<std::uint8_t>(A::kSegmentFree), kDriverTook, 0, 0, base, r->size,
                 r->stream, t});
  }
  for (const std::uint64_t base : in_order(d.expandable, of_ctx, region_order)) {
    const std::shared_ptr<Region> r = d.expandable.at(base);
    d.expandable.erase(base);
    for (const auto& [s, e] : r->ranges) {
      add(d, Entry{static_cast<std::uint8_t>(A::kSegmentUnmap), kDriverTook, 0, 0,
                   static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(e - s), r->stream, t});
    }
  }
}

void MemvizTrace::finish() {
  for (const auto& dp : devices_) {
    Device& d = *dp;
    if (d.free_completed != 0 || d.free_requested == 0) continue;
    for (const std::uint64_t p : in_order(
             d.blocks, [](const Block& b) { return b.pending; }, block_order)) {
      gone(d, p, 0, kNoFreeCompleted);
    }
  }
}

}  // namespace cudapool::analyze
