// SPDX-License-Identifier: Apache-2.0
// shim/support/diagnostics.h: the shim's own messages on stderr, through one spdlog logger
// (header-only spdlog and fmt compiled into the shim; no registry, one stderr sink, the pattern
// "cudapool: MESSAGE"): warnings, the conf string's diagnostics, the OOM explanation, the
// effective settings (info) and each driver lookup (debug). CUDAPOOL_LOG_LEVEL sets what is shown:
// off, error, warn (the default), info, debug, trace; read once, at the first message. Never on
// the hot path: every caller is a cold path (start, a bad setting, an out-of-memory, exit).
// Not here: the allocation log (recording/event_log.h), the exit report (reports/exit_report.h).
#pragma once

#include <atomic>
#include <string_view>

namespace cudapool::shim {

enum class Level : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

// Whether messages of this level are shown (CUDAPOOL_LOG_LEVEL).
bool shown(Level level);

// One message (without the "cudapool: " prefix, which the logger adds; one line, or several
// separated by '\n', each prefixed). Formatted with printf rules into a stack buffer first.
void say(Level level, const char* format, ...) __attribute__((format(printf, 2, 3)));
// Text already formatted; a leading "cudapool: " is not repeated.
void say_text(Level level, std::string_view text);

// say(Level::kWarn, ...).
void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));

// The same warning at most once per call site flag.
#define CUDAPOOL_WARN_ONCE(...)                                               \
  do {                                                                        \
    static std::atomic<bool> cudapool_warned{false};                          \
    if (!cudapool_warned.exchange(true)) ::cudapool::shim::warn(__VA_ARGS__); \
  } while (0)

}  // namespace cudapool::shim
