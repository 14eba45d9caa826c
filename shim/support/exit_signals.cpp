// SPDX-License-Identifier: Apache-2.0
// shim/support/exit_signals.cpp: see exit_signals.h.
#include "shim/support/exit_signals.h"

#include <errno.h>
#include <signal.h>

#include <atomic>
#include <mutex>

namespace cudapool::shim {

namespace {

constexpr int kExitSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};
constexpr int kMaxActions = 4;

struct EndAction {
  std::atomic<void (*)()> before_end{nullptr};
  std::atomic<void (*)()> after_failed_exec{nullptr};
};

// Filled in before the count that publishes them (under add_end_action's mutex); read by the
// handler and the hooks with lock-free loads only.
constinit EndAction g_actions[kMaxActions];
constinit std::atomic<int> g_count{0};

void on_exit_signal(int sig) {
  const int saved_errno = errno;
  run_end_actions();
  // SA_RESETHAND made the action the default again on entry; the signal, blocked while this
  // handler runs, is delivered again when it returns.
  raise(sig);
  errno = saved_errno;
}

void install_handlers() {
  for (int sig : kExitSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours {};
    ours.sa_handler = on_exit_signal;
    sigemptyset(&ours.sa_mask);
    ours.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(sig, &ours, nullptr);
  }
}

}  // namespace

void add_end_action(void (*before_end)(), void (*after_failed_exec)()) {
  static constinit std::mutex adding;
  std::lock_guard<std::mutex> lock(adding);
  const int n = g_count.load(std::memory_order_relaxed);
  if (n >= kMaxActions) return;
  g_actions[n].before_end.store(before_end, std::memory_order_relaxed);
  g_actions[n].after_failed_exec.store(after_failed_exec, std::memory_order_relaxed);
  g_count.store(n + 1, std::memory_order_release);
  if (n == 0) install_handlers();
}

void run_end_actions() {
  const int n = g_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (void (*action)() = g_actions[i].before_end.load(std::memory_order_acquire)) action();
  }
}

void run_after_failed_exec() {
  const int n = g_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (void (*action)() = g_actions[i].after_failed_exec.load(std::memory_order_acquire)) action();
  }
}

}  // namespace cudapool::shim
