// shim/support/diagnostics.h: the shim's own warnings on stderr: warn() (one line, prefixed
// "cudapool: ", formatted into a stack buffer and written with one write(2): no heap, no lock) and
// CUDAPOOL_WARN_ONCE (the same, at most once per call site). Not here: the conf string's
// diagnostics (config/, printed at initialization by settings.cpp), the OOM explanation
// (recording/oom_report.h), the exit report (lifecycle/exit_report.h).
#pragma once

#include <atomic>

namespace cudapool::shim {

// One line to stderr, prefixed "cudapool: ". Never allocates beyond a stack buffer.
void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));

// The same warning at most once per call site flag.
#define CUDAPOOL_WARN_ONCE(...)                                               \
  do {                                                                        \
    static std::atomic<bool> cudapool_warned{false};                          \
    if (!cudapool_warned.exchange(true)) ::cudapool::shim::warn(__VA_ARGS__); \
  } while (0)

}  // namespace cudapool::shim
