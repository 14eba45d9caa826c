// SPDX-License-Identifier: Apache-2.0
// shim/pools/stream_registry.h: what reuse_fence:auto knows about the program's streams and events,
// read and written by the hooks without a lock. Streams created through the hooks (cuStreamCreate,
// cuStreamCreateWithPriority, cuGreenCtxStreamCreate) have an entry: blocking or non-blocking, the
// pool of their context, and for non-blocking streams how far their work is known to be ordered
// before the legacy default stream (joined) or after the pool's last barrier (forked). Events the
// program records carry where they were recorded (a packed word per event), so a wait on one tells
// the shim which work it orders.
//
// The counting rule for a non-blocking stream s: s.records counts the event records on s (the
// program's and the shim's); work queued on s is covered by every record made after it, and the
// hook notes it by raising s.need_record to (records read after the work was queued) + 1. So s's
// work so far is covered by record k iff s.need_record <= k. Not here: the fences themselves
// (reuse_fence.h), the hooks (hooks_streams.cpp, stream_work_hooks.cpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "shim/driver/cuda_api.h"

namespace cudapool::shim {

class ReuseFence;

// Set at initialization when reuse_fence is auto (cleared in a child after fork): the hooks track
// streams and events only then.
inline std::atomic<bool> g_track_streams{false};

inline constexpr int kStreamSlots = 4096;  // power of two
inline constexpr int kEventSlots = 16384;  // power of two

struct TrackedStream {
  std::atomic<CUstream> handle{nullptr};    // nullptr: never used; kTombstone: destroyed
  std::atomic<ReuseFence*> fence{nullptr};  // its context's pool's fences (nullptr: none)
  std::atomic<bool> nonblocking{false};
  std::atomic<bool> first_work_logged{false};
  // Non-blocking streams only (see the header comment).
  alignas(64) std::atomic<std::uint64_t> records{0};
  std::atomic<std::uint64_t> need_record{0};
  std::atomic<std::uint64_t> joined{0};       // its records a legacy-ordered stream waited for
  std::atomic<std::uint64_t> ordered_gen{0};  // barriers of its pool its new work is ordered after
};

// Where a stream handle of a hooked call points.
enum class StreamKind : std::uint8_t {
  kLegacy,       // the legacy default stream (0 in a non-_ptsz call, CU_STREAM_LEGACY)
  kPerThread,    // a per-thread default stream (0 in a _ptsz call, CU_STREAM_PER_THREAD)
  kBlocking,     // a stream created blocking through the hooks
  kNonBlocking,  // a stream created non-blocking through the hooks
  kUnknown,      // a handle the shim did not see created (treated as blocking)
};

struct StreamRef {
  StreamKind kind = StreamKind::kUnknown;
  TrackedStream* entry = nullptr;  // for kBlocking and kNonBlocking
};

// Lock-free: what `stream` (as passed to a call; per_thread for the _ptsz/_ptds variants) is.
StreamRef classify_stream(CUstream stream, bool per_thread);

// Registers a stream made through a hook; nullptr when the table is full (the stream is then
// unknown, and untracked_nonblocking() turns true if it was non-blocking).
TrackedStream* register_stream(CUstream stream, bool nonblocking, ReuseFence* fence);
// Forgets a stream about to be destroyed; returns its entry (still readable) or nullptr.
TrackedStream* unregister_stream(CUstream stream);
// Whether a non-blocking stream could not be registered: fences then fall back to waiting for
// completion (no ordering shortcut may be taken for a stream the shim cannot see).
inline std::atomic<bool> g_untracked_nonblocking{false};
inline bool untracked_nonblocking() {
  return g_untracked_nonblocking.load(std::memory_order_acquire);
}
// A non-blocking stream the shim cannot follow exists (a green context's stream: its work runs in
// a context of its own): from now on fences wait for completion.
void note_untracked_nonblocking();
// Whether any non-blocking stream was ever registered: from then on legacy-stream work is noted.
inline std::atomic<bool> g_nonblocking_seen{false};

// A program event's origin, packed in one word: kNone (never recorded through a hook, or
// recorded during a capture), kOrdered (recorded on the legacy, a per-thread or a blocking stream:
// the barrier generation of the pool at the record, read before it), kNonBlocking (recorded on a
// tracked non-blocking stream: its slot and the record's number).
enum class EventOrigin : std::uint8_t { kNone = 0, kOrdered = 1, kNonBlocking = 2 };
struct EventInfo {
  EventOrigin origin = EventOrigin::kNone;
  std::uint32_t slot = 0;   // kOrdered: pool slot; kNonBlocking: stream slot
  std::uint64_t value = 0;  // kOrdered: barrier generation; kNonBlocking: record number
};
void set_event_info(CUevent event, const EventInfo& info);
EventInfo event_info(CUevent event);
void forget_event(CUevent event);

// The entry of a stream slot (for EventInfo::slot), and the slot of an entry.
TrackedStream* stream_at(std::uint32_t slot);
std::uint32_t slot_of(const TrackedStream* entry);

}  // namespace cudapool::shim
