// shim/lifecycle/startup.h: the shim's lifecycle. Lazy initialization on the first hooked call (the
// conf string is read once, its diagnostics printed once, jemalloc style), the fork handler (a
// child never pools), CUDAPOOL_DISABLE. Not here: the pools (pools/context_registry.h) and the hooks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/options.h"
#include "shim/support/never_destroyed.h"

namespace cudapool::shim {

enum class Mode : int { kUninitialized = 0, kPooling = 1, kPassThrough = 2 };

namespace detail {
extern std::atomic<int> g_mode;
Mode initialize_mode();
}  // namespace detail

// Initializes on first use; afterwards one relaxed atomic load, inlined. kPassThrough when
// CUDAPOOL_DISABLE=1 or in a child after fork. Reads no CUDA state.
inline Mode mode() {
  const int m = detail::g_mode.load(std::memory_order_relaxed);
  if (m != static_cast<int>(Mode::kUninitialized)) [[likely]]
    return static_cast<Mode>(m);
  return detail::initialize_mode();
}

// The settings in effect (valid once mode() returned kPooling).
const config::Options& options();

// What the user asked to be reported, read once with the settings: CUDAPOOL_LOG (a path template),
// CUDAPOOL_SUMMARY (stderr or a path), CUDAPOOL_BACKTRACE (return addresses per allocation),
// CUDAPOOL_TRACE_LOOKUPS (a diagnostic: one stderr line per driver-function lookup).
struct Reporting {
  std::string log_template;
  std::string summary_target;
  int backtrace_frames = 0;
  bool trace_lookups = false;  // CUDAPOOL_TRACE_LOOKUPS: print each driver-function lookup
  std::size_t log_buffer = 0;  // CUDAPOOL_LOG_BUFFER: ring capacity in events (0: the default)
  std::uint64_t start_ns = 0;  // CLOCK_MONOTONIC at initialization
  bool any() const { return !log_template.empty() || !summary_target.empty(); }
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

// The calling thread's kernel id (cached per thread). The hooks' clock is in clock.h.
std::uint64_t thread_id();

// Stream captures in progress in the process (counted by the capture hooks): while one is, the shim
// makes no driver call that could invalidate it.
std::atomic<int>& captures_in_progress();

// One line to stderr, prefixed "cudapool: ". Never allocates beyond a stack buffer.
void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));

// The same warning at most once per call site flag.
#define CUDAPOOL_WARN_ONCE(...)                                               \
  do {                                                                        \
    static std::atomic<bool> cudapool_warned{false};                          \
    if (!cudapool_warned.exchange(true)) ::cudapool::shim::warn(__VA_ARGS__); \
  } while (0)

}  // namespace cudapool::shim
