// shim/lifecycle/exit_signals.cpp: see exit_signals.h.
#include "shim/lifecycle/exit_signals.h"

#include <errno.h>
#include <signal.h>

#include <atomic>

#include "shim/recording/event_log.h"

namespace cudapool::shim {

namespace {

constexpr int kExitSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};

void on_exit_signal(int sig) {
  const int saved_errno = errno;
  wait_for_log_before_exit(kExitStallMs);
  // SA_RESETHAND made the action the default again on entry; the signal, blocked while this
  // handler runs, is delivered again when it returns.
  raise(sig);
  errno = saved_errno;
}

}  // namespace

void handle_exit_signals_for_log() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
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
