// SPDX-License-Identifier: Apache-2.0
// shim/recording/event_log.h: the shim's side of the allocation log (CUDAPOOL_LOG). The log starts
// on the first pooled allocation (the driver is initialized by then, so the header can name the
// devices); pool events reach it through a sink that adds what only the hook knows (thread, time,
// latency, backtrace); pass-through and error events are logged by the hooks directly; at exit it
// writes the summary line it is given. Not here: the file, the ring and the formatting (log/), what
// the summary line holds (reports/exit_report.cpp, from the exit snapshot), the exit signals'
// handler, _exit and exec (support/exit_signals.h: the log adds its wait as an end action).
#pragma once

#include <cstdint>

#include "log/format.h"
#include "log/record.h"
#include "log/stack_table.h"
#include "pool/events.h"

namespace cudapool::shim {

// One context's pool events, with what only the hook knows added (thread, time, latency,
// backtrace) and the context's number among the device's pooled contexts (LogRecord::ctx).
class PoolLogSink final : public pool::EventSink {
 public:
  explicit PoolLogSink(std::uint8_t ctx) : ctx_(ctx) {}
  std::uint64_t on_pool_event(const pool::PoolEvent& event) override;  // the log's seq, or 0

 private:
  std::uint8_t ctx_;  // the pool's context number (the log's "ctx")
};

// The sink a pool hands its events to: `own` when a log is written, else nullptr.
pool::EventSink* log_sink(PoolLogSink& own);

// Whether a log is being written (started on demand; false when CUDAPOOL_LOG is unset or failed).
bool logging();

// What the current hook call contributes to the alloc event the pool is about to emit.
struct CallInfo {
  std::uint64_t start_ns = 0;
  std::uint8_t frames = 0;
  std::uint64_t backtrace[log::kMaxBacktrace] = {};
  std::uint32_t python_stack = 0;  // CUDAPOOL_BACKTRACE=python: the stack's id in the log, or 0
  // The process that asked for the empty_cache the pool is about to emit, from outside (the
  // control endpoint, shim/control/); 0: the program itself.
  std::uint64_t requested_by = 0;
};
CallInfo& current_call();

// With CUDAPOOL_BACKTRACE=python or all and a log or an OOM snapshot: the calling thread's Python
// stack's id in the log (python_stack.h), else 0. Before any pool lock and any object with a
// destructor in the hook's frame: it may take the GIL, and Python may end the thread there
// (pthread_exit).
std::uint32_t take_python_stack();
// The table the Python stack ids name: the log's, else (CUDAPOOL_OOM_SNAPSHOT with
// CUDAPOOL_BACKTRACE=python and no log) the shim's own; nullptr when stacks are not taken.
log::StackTable* python_stack_table();
// Makes the shim's own table when it is needed; once, from initialization (lifecycle/startup.cpp).
void make_python_stack_table();
// Captures the caller's native backtrace into current_call() when CUDAPOOL_BACKTRACE asks for it,
// with the Python stack take_python_stack() gave.
void capture_backtrace(std::uint32_t python_stack);

// A pass-through, error or stream event; `context`, `entry` and `caller` as in LogRecord.
void log_event(log::LogAction action, int device, std::uint64_t ptr, std::uint64_t size,
               int error = 0, std::uint64_t stream = 0, std::uint64_t latency_ns = 0,
               std::uint8_t ctx = 0, const char* entry = nullptr, const char* caller = nullptr);

// A stream event (stream_created, stream_first_work): `entry` is the driver entry point (a
// string constant); the library that called it is found from the return addresses (dladdr; the
// first frame outside the shim, the CUDA runtime and the driver). A cold path: once per stream.
void log_stream_event(log::LogAction action, std::uint64_t stream, std::uint64_t size,
                      const char* entry);

// Whether this process writes a log now (started and not forgotten after fork). Never starts it.
bool log_open();

// At exit (reports/exit_report.h): writes the summary line, the leaks' frames named (dladdr) and,
// with CUDAPOOL_BACKTRACE, the loaded objects added, then closes the file. Nothing without a log.
void finish_log(log::Summary summary);

// From a signal handler, _exit or an exec about to end the process (or its image): waits until the
// log's writer has put every event queued so far in the file (a compressed log: with its frame
// closed, a complete file), or made no progress for stall_ms. Async-signal-safe. Does nothing in a
// process other than the one that started the log (a fork or vfork child).
void wait_for_log_before_exit(unsigned stall_ms);
// Its stall limit at the process's end (a writer blocked on a full pipe, or a record whose append
// the signal interrupted on the exiting thread, makes no progress).
inline constexpr unsigned kExitStallMs = 1000;

// In a child after fork: never write the parent's file.
void forget_log_after_fork();

}  // namespace cudapool::shim
