#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/fakecuda/control_cleanup_check.py: the control socket and the metrics file when the
process ends without its atexit handlers (docs/control.md, "Removed at exit"), control_workload
under the shim through the fake driver:
  - a signal at its default action that the shim handles (SIGTERM without a log, SIGHUP with
    one): the process still dies by that signal, and both files are gone;
  - _exit: the program's status, both files gone;
  - exec: a failed execvp leaves the process with its socket (made again, answering) and its
    metrics file (written again); a successful execve removes both while the same pid lives on
    in the new program;
  - a fork child ended by SIGTERM removes nothing of its parent's;
  - a file that is no longer the process's own (the metrics file replaced by a user's) is left.
Not here: the normal exit (control_check.py), the metrics file's rules (metrics_file_check.py).
Usage: control_cleanup_check.py <control_workload> <libcudapool.so> <fake libcuda dir> <scripts>
"""
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from control_lib import FAILS, Run, check, log_lines, main_guard, passed  # noqa: E402


class Test:
    def __init__(self, argv):
        self.program, self.shim, self.fake_dir, self.scripts = argv[1:5]
        self.work = tempfile.mkdtemp(prefix="cudapool-cleanup-")
        os.chmod(self.work, 0o700)
        self.xdg = os.path.join(self.work, "xdg")
        os.mkdir(self.xdg, 0o700)
        self.metrics_dir = os.path.join(self.work, "metrics")
        os.mkdir(self.metrics_dir)
        sys.path.insert(0, self.scripts)
        from cudapool_analysis import control
        self.control = control

    def socket_of(self, pid):
        return os.path.join(self.xdg, "cudapool", "%d.sock" % pid)

    def metrics_of(self, pid):
        return os.path.join(self.metrics_dir, "m-%d.prom" % pid)

    def start(self, name, args=(), **extra):
        env = {"CUDAPOOL_CONTROL": "1", "XDG_RUNTIME_DIR": self.xdg,
               "CUDAPOOL_METRICS": os.path.join(self.metrics_dir, "m-%p.prom"),
               "CUDAPOOL_METRICS_INTERVAL": "1"}
        env.update(extra)
        run = Run(self, name, env, list(args))
        if not run.wait_for(lambda: self.both_there(run.pid), "%s: the socket and the metrics "
                            "file" % name):
            return None
        return run

    def both_there(self, pid):
        return os.path.exists(self.socket_of(pid)) and os.path.exists(self.metrics_of(pid))

    def left(self, pid):
        return [p for p in (self.socket_of(pid), self.metrics_of(pid)) if os.path.lexists(p)]

    def answers(self, pid):
        try:
            return self.control.ask(self.socket_of(pid), "ping", 10).startswith("cudapool ")
        except self.control.ControlError:
            return False


def by_signal(t, sig, with_log):
    since = len(FAILS)
    name = "signal-%d%s" % (sig, "-log" if with_log else "")
    extra = {"CUDAPOOL_LOG": os.path.join(t.work, name + ".jsonl")} if with_log else {}
    run = t.start(name, **extra)
    if run is None:
        return
    log = os.path.join(t.work, name + ".jsonl")
    if with_log and not run.wait_for(lambda: os.path.exists(log), "%s: the log" % name):
        return
    run.p.send_signal(sig)
    rc = run.p.wait(60)
    check(rc == -sig, "%s: status %s, want death by signal %d" % (name, rc, sig))
    check(not t.left(run.pid), "%s: left after the signal: %s" % (name, t.left(run.pid)))
    if with_log:
        lines = log_lines(log)
        check(lines and lines[0].get("schema") == "cudapool.log/1", "%s: the log" % name)
    passed(since, "%s at its default action%s: died by it, socket and metrics file removed" % (
        signal.Signals(sig).name, " (with a log)" if with_log else ""))


def by_underscore_exit(t):
    since = len(FAILS)
    run = t.start("underscore-exit", ["--underscore-exit"])
    if run is None:
        return
    rc = run.finish()
    check(rc == 0, "_exit: status %d: %s" % (rc, run.stderr()[-300:]))
    check(not t.left(run.pid), "_exit: left: %s" % t.left(run.pid))
    passed(since, "_exit(0): status 0, socket and metrics file removed")


def ask_exec(run, *lines):
    tmp = run.path("exec.tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(tmp, run.path("exec"))


def by_exec(t):
    since = len(FAILS)
    run = t.start("exec")
    if run is None:
        return
    if not run.quiet():
        return
    pid = run.pid
    ask_exec(run, "execvp", "cudapool-no-such-program-here")
    if run.wait_for(lambda: os.path.exists(run.path("exec_failed")), "the failed exec"):
        run.wait_for(lambda: t.both_there(pid) and t.answers(pid),
                     "the socket and the metrics file after a failed exec")
        passed(since, "a failed execvp (%s): the socket answers again, the metrics file is written again"
           % open(run.path("exec_failed")).read().strip())
    done = run.path("execd")
    ask_exec(run, "execve", "/bin/sh", "-c",
             'touch %s; while [ ! -e %s ]; do sleep 0.05; done' % (done, run.path("exit")))
    if run.wait_for(lambda: os.path.exists(done), "the program after execve"):
        check(run.p.poll() is None, "exec: pid %d ended" % pid)
        check(not t.left(pid), "exec: left while pid %d runs another program: %s" % (
            pid, t.left(pid)))
        check(not t.answers(pid), "exec: the socket still answers")
    rc = run.finish()
    check(rc == 0, "exec: status %d" % rc)
    passed(since, "execve: socket and metrics file removed before the new program, which runs as pid %d"
       % pid)


def fork_child_signal(t):
    since = len(FAILS)
    run = t.start("fork", ["--fork"])
    if run is None:
        return
    if not run.wait_for(lambda: os.path.exists(run.path("child.pid")), "the fork child"):
        return
    child = int(open(run.path("child.pid")).read())
    os.kill(child, signal.SIGTERM)
    run.wait_for(lambda: not os.path.exists("/proc/%d" % child) or
                 open("/proc/%d/stat" % child).read().split(") ")[1].startswith("Z"),
                 "the child's end")
    check(t.both_there(run.pid) and t.answers(run.pid),
          "a fork child's SIGTERM removed its parent's files: left %s" % t.left(run.pid))
    rc = run.finish()
    check(rc == 0, "fork: status %d" % rc)
    passed(since, "a fork child ended by SIGTERM: the parent's socket and metrics file stay, serving")


def not_ours(t):
    since = len(FAILS)
    run = t.start("not-ours")
    if run is None:
        return
    path = t.metrics_of(run.pid)
    with open(path + ".new", "w") as f:
        f.write("the user's own file\n")
    os.rename(path + ".new", path)
    run.p.send_signal(signal.SIGTERM)
    run.p.wait(60)
    check(os.path.exists(path) and open(path).read() == "the user's own file\n",
          "SIGTERM removed or changed a metrics file that was no longer the process's")
    check(not os.path.exists(t.socket_of(run.pid)), "not ours: the socket is left")
    passed(since, "SIGTERM after the metrics file was replaced by a user's: that file stays")


def main():
    t = Test(sys.argv)
    try:
        by_signal(t, signal.SIGTERM, False)
        by_signal(t, signal.SIGHUP, True)
        by_underscore_exit(t)
        by_exec(t)
        fork_child_signal(t)
        not_ours(t)
    finally:
        subprocess.run(["rm", "-rf", t.work])


if __name__ == "__main__":
    main_guard(main)
