// SPDX-License-Identifier: Apache-2.0
// shim/pools/stream_registry.cpp: see stream_registry.h. Two open-addressing tables. Streams:
// lookups take no lock (a handle is looked up only after the hook that made it returned), inserts
// and removals take a mutex; a removed entry becomes a tombstone that a later insert may reuse.
// Events: one packed word per event, so a reader never sees half a record; inserts and removals
// under a spin lock, lookups without.
#include "shim/pools/stream_registry.h"

#include <mutex>

#include "shim/pools/spin_lock.h"

namespace cudapool::shim {

namespace {

// A lookup looks at most this many slots: tables that many create/destroy cycles filled with
// tombstones stay fast (an insert that finds no room within them leaves the handle untracked).
constexpr int kMaxProbes = 64;

const CUstream kTombstone = reinterpret_cast<CUstream>(~std::uintptr_t{0});
const CUevent kEventTombstone = reinterpret_cast<CUevent>(~std::uintptr_t{0});

TrackedStream g_streams[kStreamSlots];
std::mutex g_streams_mutex;

struct EventSlot {
  std::atomic<CUevent> handle{nullptr};
  std::atomic<std::uint64_t> word{0};
};
EventSlot g_events[kEventSlots];
SpinLock g_events_lock;

std::size_t hash_pointer(const void* p) {
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  return static_cast<std::size_t>((v >> 3) * 0x9E3779B97F4A7C15ull >> 32);
}

constexpr int kValueBits = 48;
constexpr std::uint64_t kValueMask = (std::uint64_t{1} << kValueBits) - 1;

std::uint64_t pack(const EventInfo& info) {
  return (static_cast<std::uint64_t>(info.origin) << 62) |
         (static_cast<std::uint64_t>(info.slot & 0x3fff) << kValueBits) | (info.value & kValueMask);
}

EventInfo unpack(std::uint64_t word) {
  EventInfo info;
  info.origin = static_cast<EventOrigin>(word >> 62);
  info.slot = static_cast<std::uint32_t>((word >> kValueBits) & 0x3fff);
  info.value = word & kValueMask;
  return info;
}

}  // namespace

StreamRef classify_stream(CUstream stream, bool per_thread) {
  if (stream == nullptr)
    return {per_thread ? StreamKind::kPerThread : StreamKind::kLegacy, nullptr};
  if (stream == CU_STREAM_LEGACY) return {StreamKind::kLegacy, nullptr};
  if (stream == CU_STREAM_PER_THREAD) return {StreamKind::kPerThread, nullptr};
  std::size_t i = hash_pointer(stream) & (kStreamSlots - 1);
  for (int probes = 0; probes < kMaxProbes; ++probes) {
    TrackedStream& e = g_streams[i];
    const CUstream h = e.handle.load(std::memory_order_acquire);
    if (h == stream) {
      return {e.nonblocking.load(std::memory_order_relaxed) ? StreamKind::kNonBlocking
                                                            : StreamKind::kBlocking,
              &e};
    }
    if (h == nullptr) break;
    i = (i + 1) & (kStreamSlots - 1);
  }
  return {StreamKind::kUnknown, nullptr};
}

TrackedStream* register_stream(CUstream stream, bool nonblocking, ReuseFence* fence) {
  if (nonblocking) g_nonblocking_seen.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_streams_mutex);
  std::size_t i = hash_pointer(stream) & (kStreamSlots - 1);
  TrackedStream* free_slot = nullptr;
  for (int probes = 0; probes < kMaxProbes; ++probes) {
    TrackedStream& e = g_streams[i];
    const CUstream h = e.handle.load(std::memory_order_relaxed);
    if (h == stream) {  // a handle the driver gave out again: the old stream is gone
      free_slot = &e;
      break;
    }
    if (h == kTombstone && free_slot == nullptr) free_slot = &e;
    if (h == nullptr) {
      if (free_slot == nullptr) free_slot = &e;
      break;
    }
    i = (i + 1) & (kStreamSlots - 1);
  }
  if (free_slot == nullptr) {
    if (nonblocking) g_untracked_nonblocking.store(true, std::memory_order_release);
    return nullptr;
  }
  TrackedStream& e = *free_slot;
  e.fence.store(fence, std::memory_order_relaxed);
  e.nonblocking.store(nonblocking, std::memory_order_relaxed);
  e.first_work_logged.store(false, std::memory_order_relaxed);
  e.records.store(0, std::memory_order_relaxed);
  e.need_record.store(0, std::memory_order_relaxed);
  e.joined.store(0, std::memory_order_relaxed);
  e.ordered_gen.store(0, std::memory_order_relaxed);
  e.handle.store(stream, std::memory_order_release);
  return &e;
}

TrackedStream* unregister_stream(CUstream stream) {
  const StreamRef ref = classify_stream(stream, false);
  if (ref.entry == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_streams_mutex);
  ref.entry->handle.store(kTombstone, std::memory_order_release);
  return ref.entry;
}

void note_untracked_nonblocking() {
  g_nonblocking_seen.store(true, std::memory_order_release);
  g_untracked_nonblocking.store(true, std::memory_order_release);
}

TrackedStream* stream_at(std::uint32_t slot) {
  return slot < static_cast<std::uint32_t>(kStreamSlots) ? &g_streams[slot] : nullptr;
}

std::uint32_t slot_of(const TrackedStream* entry) {
  return static_cast<std::uint32_t>(entry - g_streams);
}

void set_event_info(CUevent event, const EventInfo& info) {
  if (event == nullptr) return;
  const std::uint64_t word = pack(info);
  std::size_t i = hash_pointer(event) & (kEventSlots - 1);
  // The common case, an event recorded before: its slot is found without the lock.
  for (int probes = 0; probes < kMaxProbes; ++probes) {
    const CUevent h = g_events[i].handle.load(std::memory_order_acquire);
    if (h == event) {
      g_events[i].word.store(word, std::memory_order_release);
      return;
    }
    if (h == nullptr) break;
    i = (i + 1) & (kEventSlots - 1);
  }
  std::lock_guard<SpinLock> lock(g_events_lock);
  i = hash_pointer(event) & (kEventSlots - 1);
  EventSlot* free_slot = nullptr;
  for (int probes = 0; probes < kMaxProbes; ++probes) {
    const CUevent h = g_events[i].handle.load(std::memory_order_relaxed);
    if (h == event) {
      g_events[i].word.store(word, std::memory_order_release);
      return;
    }
    if (h == kEventTombstone && free_slot == nullptr) free_slot = &g_events[i];
    if (h == nullptr) {
      if (free_slot == nullptr) free_slot = &g_events[i];
      break;
    }
    i = (i + 1) & (kEventSlots - 1);
  }
  if (free_slot == nullptr) return;  // full: the event stays unknown (no shortcut from it)
  free_slot->word.store(word, std::memory_order_relaxed);
  free_slot->handle.store(event, std::memory_order_release);
}

EventInfo event_info(CUevent event) {
  if (event == nullptr) return {};
  std::size_t i = hash_pointer(event) & (kEventSlots - 1);
  for (int probes = 0; probes < kMaxProbes; ++probes) {
    const CUevent h = g_events[i].handle.load(std::memory_order_acquire);
    if (h == event) return unpack(g_events[i].word.load(std::memory_order_acquire));
    if (h == nullptr) break;
    i = (i + 1) & (kEventSlots - 1);
  }
  return {};
}

void forget_event(CUevent event) {
  if (event == nullptr) return;
  std::lock_guard<SpinLock> lock(g_events_lock);
  std::size_t i = hash_pointer(event) & (kEventSlots - 1);
  for (int probes = 0; probes < kMaxProbes; ++probes) {
    const CUevent h = g_events[i].handle.load(std::memory_order_relaxed);
    if (h == event) {
      g_events[i].word.store(0, std::memory_order_relaxed);
      g_events[i].handle.store(kEventTombstone, std::memory_order_release);
      return;
    }
    if (h == nullptr) return;
    i = (i + 1) & (kEventSlots - 1);
  }
}

}  // namespace cudapool::shim
