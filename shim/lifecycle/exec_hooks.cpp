// SPDX-License-Identifier: Apache-2.0
// shim/lifecycle/exec_hooks.cpp: the exported exec family (execve, execv, execvp, execvpe,
// execl, execle, execlp, fexecve, execveat). An exec replaces the process's image and keeps its
// pid: no atexit handler runs, the log's writer thread is gone with what it had queued, and the
// control socket and metrics file of a pid that lives on would stay for good. So the hook first
// runs the end actions (support/exit_signals.h: every queued event written to the log; the socket
// and the metrics file removed, each only while it is still the process's own), then the C
// library's exec; when that returns (the exec failed), the actions' undo runs (the socket and the
// metrics file are made again by the control thread) and errno is the exec's. In a child after fork
// or vfork the actions do nothing (they check the pid), and the hook only adds a call.
// Async-signal- safe, as exec is: nothing here allocates or locks (but the lookup of an exec called
// before the shim's constructor ran). Not here: the actions (control/control.h,
// recording/event_log.h), _exit (immediate_exit.cpp).
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "shim/driver/export.h"
#include "shim/driver/real_driver.h"
#include "shim/support/exit_signals.h"

extern char** environ;

namespace {

using Execve = int (*)(const char*, char* const[], char* const[]);
using Execv = int (*)(const char*, char* const[]);
using Fexecve = int (*)(int, char* const[], char* const[]);
using Execveat = int (*)(int, const char*, char* const[], char* const[], int);

struct NextExec {
  Execve execve = nullptr, execvpe = nullptr;
  Execv execv = nullptr, execvp = nullptr;
  Fexecve fexecve = nullptr;
  Execveat execveat = nullptr;
};
NextExec g_next;

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(cudapool::shim::real_dlsym(RTLD_NEXT, name));
}

// Looked up before main (a lookup at exec time could meet the loader's lock held by the thread
// a signal interrupted, or run in a vfork child). Resolving them touches no CUDA.
__attribute__((constructor(102))) void find_next_exec() {
  g_next.execve = next<Execve>("execve");
  g_next.execvpe = next<Execve>("execvpe");
  g_next.execv = next<Execv>("execv");
  g_next.execvp = next<Execv>("execvp");
  g_next.fexecve = next<Fexecve>("fexecve");
  g_next.execveat = next<Execveat>("execveat");
}

// The exec through `fn` (looked up now if an exec runs before the constructor did), between the
// end actions and, when it returns, their undo.
template <class F, class... Args>
int around_exec(F fn, const char* name, Args... args) {
  if (fn == nullptr) fn = next<F>(name);
  if (fn == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  cudapool::shim::run_end_actions();
  const int rc = fn(args...);
  const int saved_errno = errno;
  cudapool::shim::run_after_failed_exec();
  errno = saved_errno;
  return rc;
}

// execl, execle and execlp: their arguments after `arg` as an argv on the stack (as the C library
// makes it) and their environment (execle's after the null pointer, else environ), through fn.
int exec_list(Execve fn, const char* name, const char* file, const char* arg, va_list args,
              bool takes_envp) {
  va_list counting;
  va_copy(counting, args);
  size_t argc = 1;
  while (va_arg(counting, const char*) != nullptr) ++argc;
  va_end(counting);
  char** argv = static_cast<char**>(__builtin_alloca((argc + 1) * sizeof(char*)));
  argv[0] = const_cast<char*>(arg);
  for (size_t i = 1; i <= argc; ++i) argv[i] = va_arg(args, char*);
  char** envp = takes_envp ? va_arg(args, char**) : environ;
  return around_exec(fn, name, file, argv, envp);
}

}  // namespace

CUDAPOOL_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  return around_exec(g_next.execve, "execve", path, argv, envp);
}

CUDAPOOL_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  return around_exec(g_next.execvpe, "execvpe", file, argv, envp);
}

CUDAPOOL_EXPORT int execv(const char* path, char* const argv[]) noexcept {
  return around_exec(g_next.execv, "execv", path, argv);
}

CUDAPOOL_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
  return around_exec(g_next.execvp, "execvp", file, argv);
}

CUDAPOOL_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  return around_exec(g_next.fexecve, "fexecve", fd, argv, envp);
}

CUDAPOOL_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                             int flags) noexcept {
  return around_exec(g_next.execveat, "execveat", dirfd, path, argv, envp, flags);
}

CUDAPOOL_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
  va_list args;
  va_start(args, arg);
  const int rc = exec_list(g_next.execve, "execve", path, arg, args, false);
  va_end(args);
  return rc;
}

CUDAPOOL_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
  va_list args;
  va_start(args, arg);
  const int rc = exec_list(g_next.execve, "execve", path, arg, args, true);
  va_end(args);
  return rc;
}

CUDAPOOL_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
  va_list args;
  va_start(args, arg);
  const int rc = exec_list(g_next.execvpe, "execvpe", file, arg, args, false);
  va_end(args);
  return rc;
}
