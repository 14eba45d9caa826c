// SPDX-License-Identifier: Apache-2.0
// tools/analyze/accounting.cpp: see accounting.h.
#include "tools/analyze/accounting.h"

#include <vector>

#include "log/record.h"
#include "tools/analyze/backtraces.h"

namespace cudapool::analyze {

namespace {

using A = log::LogAction;

void note_segment(DeviceState& d, int ctx, Figure bytes, Figure segments) {
  d.reserved_ctx[ctx] += bytes;
  d.segments_ctx[ctx] += segments;
}

void stop_being_allocated(DeviceState& d, LiveBlock& b, BacktraceTable& backtraces) {
  b.live = false;
  --d.live_count;
  backtraces.release(b.backtrace);
  b.backtrace = 0;
}

// context_dropped: the context's pool went with its context: its blocks and segments are gone,
// not leaked; what follows of that context number belongs to a new pool.
void drop_context(DeviceState& d, std::uint64_t seq, int ctx, BacktraceTable& backtraces) {
  ++d.contexts_dropped;
  d.last_drop_seq = seq;
  std::vector<std::uint64_t> gone;
  d.blocks.for_each([&](std::uint64_t ptr, const LiveBlock& b) {
    if (b.ctx == ctx) gone.push_back(ptr);
  });
  for (const std::uint64_t ptr : gone) {
    LiveBlock& b = *d.blocks.find(ptr);
    if (b.live) {
      ++d.dropped_blocks;
      d.dropped_bytes += b.block_size;
      d.allocation.current -= 1;
      d.allocated_bytes.current -= b.block_size;
      d.requested_until_free.current -= b.size;
      stop_being_allocated(d, b, backtraces);
    }
    if (b.active) {
      d.active_n.current -= 1;
      d.active_bytes.current -= b.block_size;
      d.requested_bytes.current -= b.size;
    }
    d.blocks.erase(ptr);
  }
  if (const auto it = d.reserved_ctx.find(ctx); it != d.reserved_ctx.end()) {
    d.reserved_bytes.current -= it->second;
    d.reserved_ctx.erase(it);
  }
  if (const auto it = d.segments_ctx.find(ctx); it != d.segments_ctx.end()) {
    d.segment.current -= it->second;
    d.segments_ctx.erase(it);
  }
}

}  // namespace

Accounted account(DeviceState& d, const Event& e, std::uint64_t line, std::uint32_t bt_id,
                  BacktraceTable& backtraces, const LineProblem& problem) {
  Accounted out;
  switch (e.action) {
    case action_id(A::kAlloc): {
      if (d.peak_request_pending) {
        d.peak_request_pending = false;
        d.peak_reserved->request = Peak::Request{e.size, e.block_size, e.seq};
      }
      LiveBlock* old = d.blocks.find(e.ptr);
      if (old != nullptr && old->live) {
        problem(line, "alloc of " + hex_text(e.ptr) + ", which is still allocated (since seq " +
                          std::to_string(old->seq) + "): counted as freed");
        d.allocation.down(1);
        d.allocated_bytes.down(old->block_size);
        d.requested_until_free.down(old->size);
        stop_being_allocated(d, *old, backtraces);
      }
      if (old != nullptr && old->active) {  // its free_completed is missing: it left the cache
        d.active_n.down(1);
        d.active_bytes.down(old->block_size);
        d.requested_bytes.down(old->size);
      }
      LiveBlock& b = d.blocks.get(e.ptr);
      b = LiveBlock{e.size, e.block_size, e.seq, e.t_ns,
                    e.tid,  line,         bt_id, static_cast<std::uint8_t>(e.ctx),
                    true,   true};
      ++d.live_count;
      if (e.ctx != 0) d.contexts.insert(e.ctx);
      d.allocation.up(1);
      d.active_n.up(1);
      d.active_bytes.up(e.block_size);
      d.requested_bytes.up(e.size);
      d.requested_until_free.up(e.size);
      if (d.allocated_bytes.up(e.block_size)) {
        d.peak_allocated = Peak{};
        d.peak_allocated->bytes = d.allocated_bytes.current;
        d.peak_allocated->seq = e.seq;
        d.peak_allocated->t_ns = e.t_ns;
        d.peak_allocated->line = line;
        out.new_allocated_peak = true;
      }
      return out;
    }
    case action_id(A::kFreeRequested): {
      ++d.free_requested;
      LiveBlock* b = d.blocks.find(e.ptr);
      if (b == nullptr || !b->live) {
        problem(line, "free of " + hex_text(e.ptr) + ", which is not allocated");
        return out;
      }
      d.allocation.down(1);
      d.allocated_bytes.down(b->block_size);
      d.requested_until_free.down(b->size);
      stop_being_allocated(d, *b, backtraces);
      if (!b->active) d.blocks.erase(e.ptr);
      return out;
    }
    case action_id(A::kFreeCompleted): {
      ++d.free_completed;
      LiveBlock* b = d.blocks.find(e.ptr);
      if (b == nullptr || !b->active) {
        problem(line, "free_completed of " + hex_text(e.ptr) + ", which is not active");
        return out;
      }
      d.active_n.down(1);
      d.active_bytes.down(b->block_size);
      d.requested_bytes.down(b->size);
      b->active = false;
      if (!b->live) d.blocks.erase(e.ptr);
      return out;
    }
    case action_id(A::kSegmentAlloc):
    case action_id(A::kSegmentMap): {
      const bool whole = e.action == action_id(A::kSegmentAlloc);
      if (whole) d.segment.up(1);
      note_segment(d, e.ctx, e.size, whole ? 1 : 0);
      ++d.num_device_alloc;
      if (d.reserved_bytes.up(e.size)) {
        d.peak_reserved =
            Peak{d.reserved_bytes.current, e.seq, e.t_ns, line,   d.allocated_bytes.current,
                 d.active_bytes.current,   e.ptr, e.size, !whole, std::nullopt};
        d.peak_request_pending = true;
        out.new_reserved_peak = true;
      }
      return out;
    }
    case action_id(A::kSegmentFree):
    case action_id(A::kSegmentUnmap): {
      const bool whole = e.action == action_id(A::kSegmentFree);
      if (whole) d.segment.down(1);
      note_segment(d, e.ctx, -static_cast<Figure>(e.size), whole ? -1 : 0);
      ++d.num_device_free;
      d.reserved_bytes.down(e.size);
      return out;
    }
    case action_id(A::kContextDropped):
      drop_context(d, e.seq, e.ctx, backtraces);
      return out;
    case action_id(A::kOom):
      ++d.num_ooms;
      return out;
    default:
      return out;
  }
}

}  // namespace cudapool::analyze
