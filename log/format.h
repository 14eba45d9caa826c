// SPDX-License-Identifier: Apache-2.0
// log/format.h: the lines of the log (schema cudapool.log/1, docs/log-format.md): one event per
// LogRecord, formatted by hand into a caller's buffer without allocating (the writer thread calls
// it), and the header and summary lines (std::string: written once, at start and at exit). Every
// string is JSON-escaped; bytes that are not valid UTF-8 become \u00XX (json_text.h). The event
// line is written by format_event.cpp, the header and summary by format_lines.cpp. No I/O here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "log/json_text.h"  // json_string() and the other JSON helpers, declared there
#include "log/record.h"
#include "log/stack_table.h"
#include "pool/stats.h"

namespace cudapool::log {

inline constexpr const char* kSchema = "cudapool.log/1";

// The longest event line format_event() can write, '\n' included (every field at its widest, entry
// and caller at their longest and 16 backtrace frames come to about 1000 bytes).
inline constexpr std::size_t kMaxEventLine = 1024;

// Writes one event as a JSON object and '\n' into buf; returns the bytes written, or 0 (buf left
// undefined) when cap is too small for this line. Always present: seq, t_ns, tid, dev, action,
// ptr (hex string), size. Present when not zero: block_size, segment (hex), stream (hex),
// latency_ns, error. cache_hit (bool) for alloc events only. entry and caller (strings, at most
// 64 and 160 bytes, bytes outside [A-Za-z0-9._+:()/-] as '?') when set. backtrace (hex strings)
// when frames > 0.
std::size_t format_event(const LogRecord& record, char* buf, std::size_t cap);

struct DeviceInfo {
  int id = 0;
  std::string name;
  std::uint64_t total_memory = 0;
};

struct HeaderInfo {
  std::string version, host, executable, conf, conf_source;
  std::vector<std::string> argv;
  std::uint64_t pid = 0, start_unix_ns = 0;
  // CLOCK_MONOTONIC read together with start_unix_ns (the clock of the events' t_ns): a reader
  // puts an event on the wall clock as start_unix_ns + (t_ns - start_t_ns), and the logs of
  // several processes on one clock. Written when not 0.
  std::uint64_t start_t_ns = 0;
  // The process's rank in its job and the variable it came from (RANK, OMPI_COMM_WORLD_RANK or
  // SLURM_PROCID, as %r takes it): written when rank >= 0 (Logger::start fills them in when the
  // variable holds a decimal integer below 2^31).
  std::int64_t rank = -1;
  std::string rank_from;
  // The effective options: name, value already rendered as JSON (a number, true/false, or a string
  // made with json_string()). An empty value is written as null.
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<DeviceInfo> devices;
};

// One block still allocated at exit.
struct Leak {
  int dev = 0;
  std::uint64_t ptr = 0, size = 0, block_size = 0;
  std::uint64_t seq = 0, t_ns = 0, tid = 0;  // of its alloc event
  std::vector<std::uint64_t> frames;         // return addresses, written as "0x..."
  std::vector<std::string> symbols;          // when not empty: written instead of frames
};

// A loaded object (the executable, a shared library) and its address range [base, end): how a
// reader names a return address of a backtrace (library + offset).
struct Module {
  std::uint64_t base = 0, end = 0;
  std::string path;
  std::uint64_t bias = 0;  // the load bias (dl_phdr_info::dlpi_addr): address - bias = ELF vaddr
  std::string build_id;    // the GNU build id, lower-case hex; "" when none
};
inline constexpr std::size_t kMaxModules = 4096;

// The summary line lists at most kMaxSummaryLeaks blocks, the first ones of Summary::leaks, and
// fewer when the line would pass kMaxSummaryLine bytes; the blocks left out are counted in its
// "leaks_omitted" (count, size, block_size). The readers' line limit is 64 MiB.
inline constexpr std::size_t kMaxSummaryLeaks = 4096;
inline constexpr std::size_t kMaxSummaryLine = std::size_t{16} << 20;

struct Summary {
  // Logger::finish() fills seq, t_ns and events when they are 0.
  std::uint64_t seq = 0, t_ns = 0, events = 0;
  std::vector<std::pair<int, pool::DeviceStats>> devices;
  // Per device (the same order; may be shorter): the reuse fences' counters, written as the
  // device's "fences" object (not statistics of the pool: a replay does not reproduce them).
  std::vector<std::vector<std::pair<std::string, std::uint64_t>>> fences;
  std::vector<Leak> leaks;
  std::vector<Module> modules;  // written when not empty (backtraces were recorded)
  // CUDAPOOL_BACKTRACE=python: the alloc events given a Python stack, and the allocations without
  // one by reason (docs/log-format.md, "Python stacks"); written when recorded.
  struct PythonStacks {
    bool recorded = false;
    std::uint64_t taken = 0, no_thread_state = 0, no_frames = 0, not_running = 0, failed = 0;
  } python_stacks;
  bool write_failed = false;       // a write failed: lines are missing
  std::uint64_t records_lost = 0;  // events not written (only after a write failure)
};

// One line each, '\n' included.
std::string format_header(const HeaderInfo& header);
std::string format_summary(const Summary& summary);
// The definition lines of Python stacks (docs/log-format.md): a python_frame line, a python_stack
// line.
std::string format_python_frame(std::uint32_t id, const PythonFrame& frame);
std::string format_python_stack(std::uint32_t id, const std::vector<std::uint32_t>& frames);

}  // namespace cudapool::log
