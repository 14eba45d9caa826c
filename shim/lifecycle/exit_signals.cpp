// shim/lifecycle/exit_signals.cpp: see exit_signals.h.
#include "shim/lifecycle/exit_signals.h"

#include <errno.h>
#include <signal.h>

#include <atomic>

namespace cudapool::shim {

namespace {

constexpr int kExitSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};

// Set once, before the first handler is installed; read by the handler (a lock-free load).
std::atomic<void (*)()> g_wait_for_log{nullptr};

void on_exit_signal(int sig) {
  const int saved_errno = errno;
  if (void (*wait)() = g_wait_for_log.load(std::memory_order_acquire)) wait();
  // SA_RESETHAND made the action the default again on entry; the signal, blocked while this
  // handler runs, is delivered again when it returns.
  raise(sig);
  errno = saved_errno;
}

}  // namespace

void handle_exit_signals_for_log(void (*wait_for_log)()) {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  g_wait_for_log.store(wait_for_log, std::memory_order_release);
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

}  // namespace cudapool::shim
