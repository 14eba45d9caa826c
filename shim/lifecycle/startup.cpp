// shim/lifecycle/startup.cpp: see startup.h.
#include "shim/lifecycle/startup.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "config/environment.h"
#include "config/parse.h"
#include "shim/lifecycle/exit_report.h"
#include "shim/pools/stream_registry.h"
#include "shim/recording/clock.h"
#include "shim/recording/event_log.h"
#include "shim/support/guard.h"

namespace cudapool::shim {

namespace detail {
std::atomic<int> g_mode{static_cast<int>(Mode::kUninitialized)};
constinit NeverDestroyed<Reporting> g_reporting;
}  // namespace detail

namespace {

using detail::g_mode;

std::atomic<int> g_captures{0};
constinit config::Options g_options;
std::mutex g_init_mutex;

void on_fork_child() {
  // The child may not use the parent's CUDA context, and must not touch a lock another parent
  // thread held at fork time: every hook passes straight through from now on.
  g_mode.store(static_cast<int>(Mode::kPassThrough), std::memory_order_relaxed);
  g_track_streams.store(false, std::memory_order_relaxed);
  forget_log_after_fork();
}

bool truthy(const char* value) {
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0 &&
         std::strcmp(value, "false") != 0 && std::strcmp(value, "False") != 0;
}

// A whole number from lo to hi in the variable name, else fallback: unset or empty silently,
// anything else with one warning ("accepted: a number of UNIT from lo to hi; keeping KEPT").
long long env_count(const char* name, long long lo, long long hi, const char* unit,
                    const char* kept, long long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end != v && *end == '\0' && n >= lo && n <= hi) return n;
  warn("%s=%s: accepted: a number of %s from %lld to %lld; keeping %s", name, v, unit, lo, hi,
       kept);
  return fallback;
}

void read_reporting() {
  Reporting& r = detail::g_reporting.get();
  r.start_ns = monotonic_ns();
  if (const char* v = std::getenv("CUDAPOOL_LOG"); v != nullptr) r.log_template = v;
  if (const char* v = std::getenv("CUDAPOOL_SUMMARY"); v != nullptr) r.summary_target = v;
  r.backtrace_frames = static_cast<int>(env_count("CUDAPOOL_BACKTRACE", 0, 16, "frames", "0", 0));
  r.trace_lookups = truthy(std::getenv("CUDAPOOL_TRACE_LOOKUPS"));
  r.log_buffer = static_cast<std::size_t>(
      env_count("CUDAPOOL_LOG_BUFFER", 256, 1ll << 24, "events", "the default", 0));
  if (r.any()) register_exit_report();
}

Mode initialize() {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  const int current = g_mode.load(std::memory_order_acquire);
  if (current != static_cast<int>(Mode::kUninitialized)) return static_cast<Mode>(current);
  ReentrancyGuard guard;
  Mode result = Mode::kPooling;
  pthread_atfork(nullptr, nullptr, on_fork_child);
  if (truthy(std::getenv("CUDAPOOL_DISABLE"))) {
    result = Mode::kPassThrough;
  } else {
    const config::ConfSource source =
        config::select_conf([](const char* name) { return std::getenv(name); });
    const config::ParseResult parsed = config::parse_conf(source.conf);
    for (const auto& d : parsed.diagnostics) std::fprintf(stderr, "%s\n", d.message().c_str());
    g_options = parsed.options;
    read_reporting();
    g_track_streams.store(g_options.reuse_fence == config::ReuseFence::kAuto,
                          std::memory_order_relaxed);
    if (g_options.strict && !parsed.diagnostics.empty()) {
      std::fprintf(stderr,
                   "cudapool: strict:True and the settings in %s have errors: refusing to start\n",
                   source.variable.empty() ? "the environment" : source.variable.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  g_mode.store(static_cast<int>(result), std::memory_order_release);
  return result;
}

}  // namespace

Mode detail::initialize_mode() {
  return initialize();
}

const config::Options& options() {
  return g_options;
}

std::uint64_t thread_id() {
  static thread_local std::uint64_t id = static_cast<std::uint64_t>(::gettid());
  return id;
}

std::atomic<int>& captures_in_progress() {
  return g_captures;
}

void warn(const char* format, ...) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "cudapool: ");
  va_list args;
  va_start(args, format);
  const int m = std::vsnprintf(buf + n, sizeof buf - static_cast<std::size_t>(n) - 1, format, args);
  va_end(args);
  n = m < 0 ? n : std::min(n + m, static_cast<int>(sizeof buf) - 2);
  buf[n++] = '\n';
  ssize_t ignored = ::write(2, buf, static_cast<std::size_t>(n));
  (void)ignored;
}

}  // namespace cudapool::shim
