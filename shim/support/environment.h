// SPDX-License-Identifier: Apache-2.0
// shim/support/environment.h: the shim's environment variables, written once as a table (name,
// grammar, range, what it does), and their readers: every CUDAPOOL_* variable the shim reads is
// read through here (tests/cli/shim_environment.sh checks that, and that docs/shim.md names each
// one). The conf string's variables (CUDAPOOL_CONF, PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF)
// are config/'s (config/environment.h). Not here: what the settings do (settings.h,
// lifecycle/startup.cpp).
#pragma once

namespace cudapool::shim {

enum class EnvKind {
  kText,    // any string; unset and empty are "not given"
  kFlag,    // on unless unset, "", "0", "false" or "False"
  kCount,   // a whole number from lo to hi; anything else: one warning, the default kept
  kLevel,   // a diagnostics level (support/diagnostics.h reads it)
  kStacks,  // CUDAPOOL_BACKTRACE's grammar: N, native[:N], python[:N], all[:N] (env_stacks)
};

struct EnvVar {
  const char* name;
  EnvKind kind;
  long long lo, hi;   // kCount: the accepted range
  const char* unit;   // kCount: what is counted, for the warning
  const char* kept;   // kCount: the default, as the warning names it
  const char* about;  // one line: what it does
};

enum class Env {
  kDisable,
  kLog,
  kLogBuffer,
  kSummary,
  kBacktrace,
  kTraceLookups,
  kLogLevel,
  kControl,
  kMetrics,
  kMetricsInterval,
  kOomSnapshot,
  kTestCompressionLibrary,
};

inline constexpr EnvVar kEnvironment[] = {
    {"CUDAPOOL_DISABLE", EnvKind::kFlag, 0, 0, "", "", "pure pass-through: the shim pools nothing"},
    {"CUDAPOOL_LOG", EnvKind::kText, 0, 0, "", "", "the allocation log's path template (%p %r %h)"},
    {"CUDAPOOL_LOG_BUFFER", EnvKind::kCount, 256, 1ll << 24, "events", "the default",
     "the log ring's size in events"},
    {"CUDAPOOL_SUMMARY", EnvKind::kText, 0, 0, "", "", "stderr, stdout or a path: the exit report"},
    {"CUDAPOOL_BACKTRACE", EnvKind::kStacks, 0, 16, "frames", "none",
     "what each allocation records of its caller: N or native[:N] return addresses (N 1-16, "
     "default 8), python[:N] Python frames (N 1-256, default 64), all[:N] both"},
    {"CUDAPOOL_TRACE_LOOKUPS", EnvKind::kFlag, 0, 0, "", "",
     "each driver-function lookup on stderr (also CUDAPOOL_LOG_LEVEL=debug)"},
    {"CUDAPOOL_LOG_LEVEL", EnvKind::kLevel, 0, 0, "", "",
     "the shim's messages: off, error, warn, info, debug, trace"},
    {"CUDAPOOL_CONTROL", EnvKind::kText, 0, 0, "", "",
     "1 or a directory: a control socket for cudapool stats/empty-cache/snapshot/top"},
    {"CUDAPOOL_METRICS", EnvKind::kText, 0, 0, "", "",
     "a path template (%p %r %h): a Prometheus textfile rewritten every few seconds"},
    {"CUDAPOOL_METRICS_INTERVAL", EnvKind::kCount, 1, 86400, "seconds", "5",
     "seconds between rewrites of the CUDAPOOL_METRICS file"},
    {"CUDAPOOL_OOM_SNAPSHOT", EnvKind::kText, 0, 0, "", "",
     "a path template (%p %r %h): a memory_viz snapshot (pickle) written at the first "
     "out-of-memory"},
    {"CUDAPOOL_TEST_COMPRESSION_LIBRARY", EnvKind::kText, 0, 0, "", "",
     "tests only: the library dlopen loads for a .zst or .gz log instead of libzstd/libz"},
};

constexpr const EnvVar& env_var(Env e) {
  return kEnvironment[static_cast<int>(e)];
}

// The raw value (nullptr: unset). The one place the shim calls getenv for its own variables.
const char* env_raw(Env e);
// kText: the value, or "" when unset.
const char* env_text(Env e);
// kFlag.
bool env_flag(Env e);
// kCount: the number, or fallback when unset or empty; a value outside the grammar also gives
// fallback and sets *bad (the caller warns: count_warning's text).
long long env_count(Env e, long long fallback, bool* bad);
// "NAME=VALUE: accepted: a number of UNIT from LO to HI; keeping KEPT", into buf.
void count_warning(Env e, char* buf, unsigned long size);

// CUDAPOOL_BACKTRACE (kStacks): how many native return addresses (0 to 16) and Python frames (0 to
// 256) each allocation records. Unset or empty: none. A value outside the grammar: none, and *bad
// set (the caller warns: stacks_warning's text).
struct StacksSetting {
  int native = 0, python = 0;
};
StacksSetting env_stacks(Env e, bool* bad);
void stacks_warning(Env e, char* buf, unsigned long size);

}  // namespace cudapool::shim
