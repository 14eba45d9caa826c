// log/record.h: one logged event as the hook hands it over: a fixed-size plain record, copied into
// the log's ring buffer on the hot path and formatted as one JSON line by the writer thread
// (format.h). The field meanings are the log format's (docs/log-format.md). No I/O, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pool/events.h"

namespace cudapool::log {

// Actions: the pool's (PyTorch's memory-snapshot names) and the shim's own.
enum class LogAction : std::uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kOom,
  kEmptyCache,
  // Pass-through allocation APIs, logged but not pooled.
  kAllocAsync,    // cuMemAllocAsync(_ptsz), cuMemAllocFromPoolAsync(_ptsz)
  kFreeAsync,     // cuMemFreeAsync(_ptsz) of a pointer the pool does not own
  kAllocManaged,  // cuMemAllocManaged
  kAllocPitch,    // cuMemAllocPitch_v2 (size = pitch * height)
  kVmmCreate,     // cuMemCreate (ptr = the allocation handle)
  kVmmRelease,    // cuMemRelease (ptr = the handle)
  kVmmMap,        // cuMemMap (ptr = the address, size = bytes mapped)
  kVmmUnmap,      // cuMemUnmap
  kAllocHost,     // cuMemAllocHost_v2, cuMemHostAlloc (page-locked host memory)
  kFreeHost,      // cuMemFreeHost
  kFreeUnowned,   // cuMemFree_v2 of a pointer the pool does not own (forwarded to the driver)
  // Errors answered by the shim.
  kBadFree,         // a double or interior free inside a pooled segment
  kIpcRefused,      // cuIpcGetMemHandle refused for a block inside a segment
  kContextDropped,  // a context's pool dropped (destroy, reset, last release)
  // Diagnostics of the reuse fences: which streams besides the legacy one exist and get work.
  kStreamCreated,    // a stream made through a hook (size = its flags; entry, caller)
  kStreamFirstWork,  // the first work queued on a stream other than the legacy one (entry, caller)
  // The pool's: the device refused a segment or pages (after which the pool freed and retried).
  kSegmentRefused,
};
inline constexpr LogAction kLastLogAction = LogAction::kSegmentRefused;

inline constexpr std::size_t kMaxBacktrace = 16;

// What an oom event carries besides size (requested) and block_size (rounded): pool/oom.h's
// OomState, as plain numbers. cause is 0 when the event has no figures, else OomCause + 1.
struct OomFigures {
  std::uint64_t segment_size, device_total, device_free, cap, reserved, allocated, free_blocks,
      largest_free_block;
  std::uint8_t cause;
  bool device_free_known;
};

struct LogRecord {
  std::uint64_t seq = 0;   // order of events in the process, from 1
  std::uint64_t t_ns = 0;  // CLOCK_MONOTONIC
  std::uint64_t tid = 0;   // gettid()
  std::int32_t device = 0;
  LogAction action = LogAction::kAlloc;
  bool cache_hit = false;   // alloc: served from the cache, no device allocation
  std::uint8_t frames = 0;  // return addresses in backtrace[]
  // Which of the device's pooled contexts: 0 for the first, and for every event of a process
  // with one context per device; n for a context made while n others of the device had pools.
  std::uint8_t context = 0;
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;        // requested bytes (segment bytes for segment events)
  std::uint64_t block_size = 0;  // rounded block size; 0 when it does not apply
  std::uint64_t segment = 0;     // base of the block's segment; 0 when it does not apply
  std::uint64_t stream = 0;      // 0 when it does not apply
  std::uint64_t latency_ns = 0;  // time spent in the hook; 0 when not measured
  std::int32_t error = 0;        // CUresult returned, for error and pass-through events
  // Stream events: the driver entry point (a string constant) and the library that called it
  // (interned by the shim, never freed); nullptr when they do not apply.
  const char* entry = nullptr;
  const char* caller = nullptr;
  // alloc events carry return addresses, oom events their figures: never both.
  union {
    std::uint64_t backtrace[kMaxBacktrace] = {};
    OomFigures oom;
  };
};
static_assert(sizeof(OomFigures) <= sizeof(std::uint64_t) * kMaxBacktrace);

const char* action_name(LogAction action);

// A pool event as a record (device, action, ptr, size, block_size, segment, stream, cache_hit);
// seq, time and thread are left for the caller or the logger to fill.
LogRecord record_of(const pool::PoolEvent& event);

}  // namespace cudapool::log
