// SPDX-License-Identifier: Apache-2.0
// shim/lifecycle/startup.cpp: the shim's start: the mode's initialization (support/mode.h) on the
// first hooked call, the fork handler, the at-exit report's arming.
#include "shim/support/mode.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "shim/control/control.h"
#include "shim/pools/idle_release.h"
#include "shim/pools/stream_registry.h"
#include "shim/recording/event_log.h"
#include "shim/reports/exit_report.h"
#include "shim/support/diagnostics.h"
#include "shim/support/guard.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

namespace {

using detail::g_mode;

std::mutex g_init_mutex;

void on_fork_child() {
  // The child may not use the parent's CUDA context, and must not touch a lock another parent
  // thread held at fork time: every hook passes straight through from now on.
  g_mode.store(static_cast<int>(Mode::kPassThrough), std::memory_order_relaxed);
  g_track_streams.store(false, std::memory_order_relaxed);
  forget_log_after_fork();
}

// The exit report, in the process that pools (a child after fork inherits the handler and
// reports nothing).
void at_exit() {
  if (mode() != Mode::kPooling) return;
  run_exit_report();
}

Mode initialize() {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  const int current = g_mode.load(std::memory_order_acquire);
  if (current != static_cast<int>(Mode::kUninitialized)) return static_cast<Mode>(current);
  ReentrancyGuard guard;
  Mode result = Mode::kPooling;
  pthread_atfork(nullptr, nullptr, on_fork_child);
  if (disabled_by_environment()) {
    result = Mode::kPassThrough;
  } else {
    const ConfErrors errors = read_settings();
    if (reporting().any()) std::atexit(at_exit);  // once: this runs once per process
    make_python_stack_table();                    // CUDAPOOL_OOM_SNAPSHOT without a log
    g_track_streams.store(options().reuse_fence == config::ReuseFence::kAuto,
                          std::memory_order_relaxed);
    if (options().strict && errors.any) {
      say(Level::kError, "strict:True and the settings in %s have errors: refusing to start",
          errors.variable.empty() ? "the environment" : errors.variable.c_str());
      std::_Exit(1);
    }
    start_control();       // CUDAPOOL_CONTROL, CUDAPOOL_METRICS: its thread, its own at-exit stop
    start_idle_release();  // idle_release_ms: its thread, its own at-exit stop
  }
  g_mode.store(static_cast<int>(result), std::memory_order_release);
  return result;
}

}  // namespace

Mode detail::initialize_mode() {
  return initialize();
}

}  // namespace cudapool::shim
