// SPDX-License-Identifier: Apache-2.0
// pool/events.h: what the pool reports as it works, named as in PyTorch's memory-snapshot trace.
// The pool calls an EventSink synchronously under its lock; a sink must be cheap (log/ copies the
// event into a buffer and formats it on another thread). No sink, no cost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pool/oom.h"

namespace cudapool::pool {

// The actions of pool/actions.def, in its order.
enum class Action : std::uint8_t {
#define CUDAPOOL_POOL_ACTION(id, name, meaning) id,
#include "pool/actions.def"
#undef CUDAPOOL_POOL_ACTION
};
inline constexpr std::size_t kPoolActions = 0
#define CUDAPOOL_POOL_ACTION(id, name, meaning) +1
#include "pool/actions.def"
#undef CUDAPOOL_POOL_ACTION
    ;

std::string_view action_name(Action action);

struct PoolEvent {
  Action action = Action::kAlloc;
  int device = 0;
  std::uintptr_t ptr = 0;
  std::size_t size = 0;        // requested bytes (segment bytes for segment events)
  std::size_t block_size = 0;  // rounded size of the block, where a block is involved
  std::uintptr_t segment = 0;  // base of the segment holding the block
  std::uintptr_t stream = 0;
  bool cache_hit = false;         // kAlloc: served from cached memory without a device allocation
  const OomState* oom = nullptr;  // kOom: what the out-of-memory means (oom.h)
  int error = 0;                  // kAllocFailed: the backend's code (a CUresult in the shim)
};

// An event with the fields every action has; the caller sets the rest (ptr, segment, ...).
inline PoolEvent event_of(Action action, int device, std::size_t size, std::size_t block_size,
                          std::uintptr_t stream) {
  PoolEvent event;
  event.action = action;
  event.device = device;
  event.size = size;
  event.block_size = block_size;
  event.stream = stream;
  return event;
}

// Where a pool's events go. on_pool_event returns the event's number in the sink's record (a log's
// seq), or 0 when it keeps none: the pool keeps an alloc event's number in its block (Block::
// alloc_seq, named by snapshots), so the sink hands it back once, to the pool that made the event.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual std::uint64_t on_pool_event(const PoolEvent& event) = 0;
};

}  // namespace cudapool::pool
