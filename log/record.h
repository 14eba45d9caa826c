// SPDX-License-Identifier: Apache-2.0
// log/record.h: one logged event as the hook hands it over: a fixed-size plain record, copied into
// the log's ring buffer on the hot path and formatted as one JSON line by the writer thread
// (format.h). The field meanings are the log format's (docs/log-format.md). No I/O, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pool/events.h"

namespace cudapool::log {

// Actions: the pool's (pool/actions.def, with the same values as pool::Action) and then the
// shim's own (log/shim_actions.def).
enum class LogAction : std::uint8_t {
#define CUDAPOOL_POOL_ACTION(id, name, meaning) id,
#include "pool/actions.def"
#undef CUDAPOOL_POOL_ACTION
#define CUDAPOOL_SHIM_ACTION(id, name, meaning) id,
#include "log/shim_actions.def"
#undef CUDAPOOL_SHIM_ACTION
  kCount
};
inline constexpr LogAction kLastLogAction =
    static_cast<LogAction>(static_cast<int>(LogAction::kCount) - 1);

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
  // The context's number (the log's "ctx"; ContextPool::ctx): which of the device's pooled
  // contexts: 0 for the first, and for every event of a process with one context per device; n for
  // a context made while n others of the device had pools.
  std::uint8_t ctx = 0;
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;        // requested bytes (segment bytes for segment events)
  std::uint64_t block_size = 0;  // rounded block size; 0 when it does not apply
  std::uint64_t segment = 0;     // base of the block's segment; 0 when it does not apply
  std::uint64_t stream = 0;      // 0 when it does not apply
  std::uint64_t latency_ns = 0;  // time spent in the hook; 0 when not measured
  std::int32_t error = 0;        // CUresult returned, for error and pass-through events
  // empty_cache events: the process that asked for it from outside (its pid; 0: the program
  // itself). In what was padding after error: the record's fixed part keeps its size.
  std::uint32_t requested_by = 0;
  // alloc events with CUDAPOOL_BACKTRACE=python: the id of the thread's Python stack in the
  // logger's StackTable (stack_table.h), whose definition lines the writer puts before the event;
  // 0: none.
  std::uint32_t python_stack = 0;
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
// The action of a log name; false for a name that is no action.
bool action_from_name(std::string_view name, LogAction* action);

// A pool event as a record (device, action, ptr, size, block_size, segment, stream, cache_hit);
// seq, time and thread are left for the caller or the logger to fill.
LogRecord record_of(const pool::PoolEvent& event);

}  // namespace cudapool::log
