// shim/lifecycle/immediate_exit.cpp: the exported _exit and _Exit. They end the process without
// atexit handlers (Python's os._exit, a program skipping its teardown), so the at-exit report
// (exit_report.h) never runs, and the log's writer thread dies with whatever is still queued.
// While a log is written, the hook first waits until the writer has put every queued event in the
// file (event_log.h's bounded, async-signal-safe wait, the one the exit signals' handler makes:
// _exit may be called from a signal handler), then calls the next _exit. Not here: a summary line
// or CUDAPOOL_SUMMARY (they need the pools' locks and memory allocation, which a signal handler
// calling _exit may not take: the log ends as a killed process's does), exit() (exit_report.h),
// signals (exit_signals.h).
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/interpose/export.h"
#include "shim/interpose/real_driver.h"
#include "shim/recording/event_log.h"

namespace {

using ExitFn = void (*)(int);
ExitFn g_next_exit = nullptr;

// Looked up before main (a lookup at exit could meet the loader's lock held by the thread a
// signal interrupted). Resolving it touches no CUDA.
__attribute__((constructor(102))) void find_next_exit() {
  g_next_exit = reinterpret_cast<ExitFn>(cudapool::shim::real_dlsym(RTLD_NEXT, "_exit"));
}

[[noreturn]] void end_process(int status) {
  cudapool::shim::wait_for_log_before_exit(cudapool::shim::kExitStallMs);
  if (g_next_exit != nullptr) g_next_exit(status);
  for (;;) syscall(SYS_exit_group, status);  // what glibc's _exit does
}

}  // namespace

CUDAPOOL_EXPORT void _exit(int status) noexcept {
  end_process(status);
}

CUDAPOOL_EXPORT void _Exit(int status) noexcept {
  end_process(status);
}
