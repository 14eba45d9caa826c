// shim/runtime.cpp: see runtime.h.
#include "shim/runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "config/environment.h"
#include "config/parse.h"
#include "shim/guard.h"

namespace cudapool::shim {

namespace {

std::atomic<int> g_mode{static_cast<int>(Mode::kUninitialized)};
std::atomic<int> g_captures{0};
config::Options g_options;
std::mutex g_init_mutex;

void on_fork_child() {
  // The child may not use the parent's CUDA context, and must not touch a lock another parent
  // thread held at fork time: every hook passes straight through from now on.
  g_mode.store(static_cast<int>(Mode::kPassThrough), std::memory_order_relaxed);
}

bool truthy(const char* value) {
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0 &&
         std::strcmp(value, "false") != 0 && std::strcmp(value, "False") != 0;
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

Mode mode() {
  const int m = g_mode.load(std::memory_order_relaxed);
  if (m != static_cast<int>(Mode::kUninitialized)) return static_cast<Mode>(m);
  return initialize();
}

const config::Options& options() { return g_options; }

std::atomic<int>& captures_in_progress() { return g_captures; }

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
