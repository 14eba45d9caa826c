// SPDX-License-Identifier: Apache-2.0
// shim/lifecycle/immediate_exit.cpp: the exported _exit and _Exit. They end the process without
// atexit handlers (Python's os._exit, a program skipping its teardown), so the at-exit report
// (reports/exit_report.h) never runs, the log's writer thread dies with whatever is still queued,
// and the control socket and metrics file would stay. The hook first runs the end actions
// (support/exit_signals.h, the ones the exit signals' handler runs, all async-signal-safe: _exit
// may be called from a signal handler): the log's bounded wait until the writer has put every
// queued event in the file, the removal of the control socket and the metrics file; then it calls
// the next _exit. Not here: a summary line or CUDAPOOL_SUMMARY (they need the pools' locks and
// memory allocation, which a signal handler calling _exit may not take: the log ends as a killed
// process's does), exit() (reports/exit_report.h), signals (support/exit_signals.h), exec
// (exec_hooks.cpp).
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/driver/export.h"
#include "shim/driver/real_driver.h"
#include "shim/support/exit_signals.h"

namespace {

using ExitFn = void (*)(int);
ExitFn g_next_exit = nullptr;

// Looked up before main (a lookup at exit could meet the loader's lock held by the thread a
// signal interrupted). Resolving it touches no CUDA.
__attribute__((constructor(102))) void find_next_exit() {
  g_next_exit = reinterpret_cast<ExitFn>(cudapool::shim::real_dlsym(RTLD_NEXT, "_exit"));
}

[[noreturn]] void end_process(int status) {
  cudapool::shim::run_end_actions();
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
