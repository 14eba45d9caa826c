// SPDX-License-Identifier: Apache-2.0
// shim/support/settings.h: the settings the shim runs with, read once at initialization
// (lifecycle/startup.cpp) and never changed afterwards: the conf string's Options (config/; from
// CUDAPOOL_CONF, PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF) and what the user asked to be
// reported (CUDAPOOL_LOG, CUDAPOOL_SUMMARY, CUDAPOOL_BACKTRACE, CUDAPOOL_TRACE_LOOKUPS,
// CUDAPOOL_LOG_BUFFER), plus whether CUDAPOOL_DISABLE turns the shim off. Both are held in
// constant-initialized storage that no static initializer overwrites (the shim may start before
// its own initializers ran, never_destroyed.h) and are read without a lock. Not here: when they are
// read and what follows from them (lifecycle/startup.cpp: the mode, strict:True's refusal, the
// at-exit report), the conf grammar (config/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/describe.h"
#include "config/options.h"
#include "shim/support/never_destroyed.h"

namespace cudapool::shim {

// The settings in effect (valid once mode() returned kPooling).
const config::Options& options();

// What the user asked to be reported, read once with the settings: CUDAPOOL_LOG (a path template),
// CUDAPOOL_SUMMARY (stderr or a path), CUDAPOOL_BACKTRACE (return addresses per allocation),
// CUDAPOOL_TRACE_LOOKUPS (a diagnostic: one stderr line per driver-function lookup),
// CUDAPOOL_OOM_SNAPSHOT (shim/reports/oom_snapshot.h).
struct Reporting {
  std::string log_template;
  std::string summary_target;
  int backtrace_frames = 0;    // CUDAPOOL_BACKTRACE: native return addresses per allocation
  int python_frames = 0;       // CUDAPOOL_BACKTRACE=python or all: Python frames per allocation
  bool trace_lookups = false;  // CUDAPOOL_TRACE_LOOKUPS: print each driver-function lookup
  std::size_t log_buffer = 0;  // CUDAPOOL_LOG_BUFFER: ring capacity in events (0: the default)
  // CUDAPOOL_TEST_COMPRESSION_LIBRARY (tests only): what a compressed log dlopens ("": the usual).
  std::string compression_library;
  std::uint64_t start_ns = 0;  // CLOCK_MONOTONIC at initialization
  // CUDAPOOL_CONTROL (1 or a directory), CUDAPOOL_METRICS (a path template) and
  // CUDAPOOL_METRICS_INTERVAL (seconds): the control endpoint (shim/control/control.h).
  std::string control;
  std::string metrics_template;
  int metrics_interval_s = 5;
  // CUDAPOOL_OOM_SNAPSHOT (a path template): the memory_viz snapshot of the first out-of-memory.
  std::string oom_snapshot;
  // Whether the hooks record who asked for each block (time, thread, CUDAPOOL_BACKTRACE's frames,
  // and keep them in the pool): a log or a summary is written, or an OOM snapshot with
  // CUDAPOOL_BACKTRACE wants the blocks' frames. Set once with the rest.
  bool records = false;
  bool any() const { return records; }
};
namespace detail {
// Constant-initialized and never destroyed (never_destroyed.h): the shim may be initialized by
// another library's constructor before its own static initializers run.
extern NeverDestroyed<Reporting> g_reporting;
}  // namespace detail
// Inline: the pooled hooks ask reporting().any() on every call.
inline const Reporting& reporting() {
  return detail::g_reporting.get();
}

// The conf string as read at initialization, kept for the log's header (never read or parsed
// again): the string, the variable it came from ("": none), and every setting in force.
struct ConfRecord {
  std::string conf;
  std::string variable;
  std::vector<config::EffectiveSetting> settings;
};
// Valid once mode() returned kPooling; empty before.
const ConfRecord& conf_record();

// Whether CUDAPOOL_DISABLE is set to anything but "", "0", "false" or "False".
bool disabled_by_environment();

// The conf string's errors, for strict:True (startup refuses to start on them).
struct ConfErrors {
  bool any = false;
  std::string variable;  // the variable the conf string came from ("": none was set)
};

// Reads the settings: the conf string (its diagnostics printed on stderr, one line each, the
// defaults kept for what they name), then the reporting variables (a malformed number is warned
// about and its default kept). Once, from startup's initialization.
ConfErrors read_settings();

}  // namespace cudapool::shim
