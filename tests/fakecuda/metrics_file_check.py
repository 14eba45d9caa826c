#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/fakecuda/metrics_file_check.py: the CUDAPOOL_METRICS file's rules (docs/control.md,
"Metrics"; log/rewritten_file.h) through the fake driver, control_workload under the shim:
  - a free name: the file is made, parses as Prometheus text, and is removed at exit;
  - a name that is taken (a user's file, a symbolic link to one, a dangling link, a FIFO, a
    character device made outside /dev, the process's own log) is left exactly as it was, with
    one warning naming it, and nothing else is left in its directory;
  - the file replaced or removed by someone else while the process runs: one warning, the other
    file left as it is (never rewritten, never removed at exit), the removed one not made again;
  - /dev/shm is allowed; nothing is made, replaced or removed in /dev: /dev/null and /dev/full are
    tried in a private mount namespace whose /dev is a tmpfs of the test's own (root only; said
    and skipped otherwise).
Not here: the endpoint's answers (control_check.py), the clean-up at a signal, _exit and exec
(control_cleanup_check.py).
Usage: metrics_file_check.py <control_workload> <libcudapool.so> <fake libcuda dir>
"""
import os
import re
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from control_lib import (FAILS, Run, check, fail, last_line, log_lines, main_guard,  # noqa: E402
                         parse_prometheus, passed)


class Test:
    def __init__(self, argv):
        self.program, self.shim, self.fake_dir = argv[1:4]
        self.work = tempfile.mkdtemp(prefix="cudapool-metrics-")
        os.chmod(self.work, 0o700)


def metrics_env(path, **extra):
    env = {"CUDAPOOL_METRICS": path, "CUDAPOOL_METRICS_INTERVAL": "1"}
    env.update(extra)
    return env


def warned(run, words):
    return lambda: words in run.stderr()


def describe(path):
    """What is at path, for comparing before and after: kind, target or content."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ("missing",)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path), st.st_ino)
    if stat.S_ISREG(st.st_mode):
        return ("file", open(path, "rb").read(), st.st_ino)
    return (stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino)


def free_name(t):
    since = len(FAILS)
    d = os.path.join(t.work, "free")
    os.mkdir(d)
    path = os.path.join(d, "cudapool-%p.prom")
    run = Run(t, "free-run", metrics_env(path))
    path = path.replace("%p", str(run.pid))
    if run.wait_for(lambda: os.path.exists(path), "the metrics file"):
        try:
            parse_prometheus(open(path).read())
        except ValueError as e:
            fail("the metrics file does not parse: %s" % e)
    rc = run.finish()
    check(rc == 0, "free name: status %d: %s" % (rc, run.stderr()[-300:]))
    check(os.listdir(d) == [], "free name: left after exit: %s" % os.listdir(d))
    check("CUDAPOOL_METRICS" not in run.stderr(), "free name: a warning: %s" % run.stderr())
    passed(since, "a free name: made, parsed, removed at exit, no warning")


def taken(t, name, make):
    """The metrics file's name is taken by what make(path) leaves there: it must stay as it
    was, with one warning naming it, and nothing else may appear in its directory."""
    since = len(FAILS)
    slug = re.sub(r"\W+", "-", name)
    d = os.path.join(t.work, "taken-" + slug)
    os.mkdir(d)
    path = os.path.join(d, "m.prom")
    if not make(path):
        print("skipped: %s (cannot make one here)" % name, flush=True)
        return
    before, names = describe(path), sorted(os.listdir(d))
    run = Run(t, "run-" + slug, metrics_env(path))
    words = "%s exists and this process did not make it" % path
    run.wait_for(warned(run, words), "a warning naming the taken name (%s)" % name)
    rc = run.finish()
    check(rc == 0, "%s: status %d: %s" % (name, rc, run.stderr()[-300:]))
    check(describe(path) == before, "%s: the name's %s became %s" % (name, before[:2],
                                                                     describe(path)[:2]))
    check(sorted(os.listdir(d)) == names, "%s: the directory now holds %s" % (name, os.listdir(d)))
    check(run.stderr().count(words) == 1, "%s: %d warnings naming it: %s" % (
        name, run.stderr().count(words), run.stderr()[-400:]))
    passed(since, "%s at the name: left as it was; %s" % (name, last_line(run)))


def write_file(path, text=b"the user's own file\n"):
    with open(path, "wb") as f:
        f.write(text)
    return True


def make_link(path):
    target = path + ".target"
    write_file(target)
    os.symlink(target, path)
    return True


def make_chardev(path):
    """A character device outside /dev (root only): a node of /dev/null's numbers."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return True
    except OSError:
        return False


def own_log(t):
    """CUDAPOOL_LOG and CUDAPOOL_METRICS name one file. The log is made first (the metrics file's
    temporary name is taken by a directory until the log exists, so the first writes fail): the
    metrics file must then leave the log alone, and the log end whole."""
    since = len(FAILS)
    d = os.path.join(t.work, "own-log")
    os.mkdir(d)
    path = os.path.join(d, "run.jsonl")
    run = Run(t, "own-log-run", {"CUDAPOOL_LOG": path, "CUDAPOOL_METRICS": path,
                                 "CUDAPOOL_METRICS_INTERVAL": "1"},
              ["--rate", "20000"], wrap="mkdir %s.tmp.$$;" % path)
    tmp_dir = "%s.tmp.%d" % (path, run.pid)
    if run.wait_for(lambda: os.path.exists(path) and os.path.getsize(path) > 0, "the log"):
        os.rmdir(tmp_dir)
        run.wait_for(warned(run, "%s exists and this process did not make it" % path),
                     "a warning that the log's name is taken")
    rc = run.finish()
    check(rc == 0, "own log: status %d: %s" % (rc, run.stderr()[-300:]))
    try:
        lines = log_lines(path)
        check(lines[0].get("schema") == "cudapool.log/1" and lines[-1].get("action") == "summary",
              "own log: the log is not whole: first %s, last %s" % (lines[0], lines[-1]))
        passed(since, "the log's own name: the log is whole (%d lines, header to summary); %s" % (
            len(lines), last_line(run)))
    except (OSError, ValueError, IndexError) as e:
        fail("own log: the log %s is lost or broken: %s (left: %s)" % (path, e, os.listdir(d)))


def changed_midway(t, name, change, words):
    """The metrics file, once written, is replaced or removed by someone else: one warning, the
    name is never written again (what is there stays, also at exit)."""
    since = len(FAILS)
    d = os.path.join(t.work, "midway-" + name)
    os.mkdir(d)
    path = os.path.join(d, "m.prom")
    run = Run(t, "midway-run-" + name, metrics_env(path))
    if not run.wait_for(lambda: os.path.exists(path), "the metrics file (%s)" % name):
        run.finish()
        return
    change(path)
    after = describe(path)
    run.wait_for(warned(run, "%s %s" % (path, words)), "a warning that the file %s" % words)
    rc = run.finish()
    check(rc == 0, "%s: status %d: %s" % (name, rc, run.stderr()[-300:]))
    check(describe(path) == after, "%s: the name held %s, now %s" % (name, after[:2],
                                                                    describe(path)[:2]))
    check(not [n for n in os.listdir(d) if ".tmp." in n], "%s: a temporary left: %s" % (
        name, os.listdir(d)))
    check(run.stderr().count(words) == 1, "%s: %d warnings" % (name, run.stderr().count(words)))
    passed(since, "the file %s while the process ran: left so; %s" % (
        words, last_line(run)))


def replace_with_users(path):
    write_file(path + ".new")
    os.rename(path + ".new", path)


def dev_shm(t):
    since = len(FAILS)
    if not os.path.isdir("/dev/shm"):
        print("skipped: /dev/shm (none here)", flush=True)
        return
    path = "/dev/shm/cudapool-metrics-test-%p.prom"
    run = Run(t, "shm-run", metrics_env(path))
    path = path.replace("%p", str(run.pid))
    run.wait_for(lambda: os.path.exists(path), "the metrics file in /dev/shm")
    rc = run.finish()
    check(rc == 0 and not os.path.exists(path), "/dev/shm: status %d, left: %s" % (
        rc, os.path.exists(path)))
    passed(since, "/dev/shm: the metrics file made there and removed at exit")


NAMESPACE = r'''
set -u
mount -t tmpfs -o mode=755 cudapool-test /dev || exit 77
for n in null:3 zero:5 full:7 urandom:9; do mknod -m 666 /dev/${n%%:*} c 1 ${n#*:} || exit 77; done
before=$(ls -A /dev | tr '\n' ' ')
for target in /dev/null /dev/full; do
  dir="$WORK/ns$(basename $target)"
  mkdir -p "$dir" && touch "$dir/exit"
  CUDAPOOL_METRICS=$target LD_PRELOAD="$SHIM" "$PROGRAM" "$dir" --steps 3000 >"$dir/stdout" 2>"$dir/stderr"
  echo "$target status $? $(stat -c %F $target)"
done
echo "dev before: $before"
echo "dev after: $(ls -A /dev | tr '\n' ' ')"
'''


def in_dev(t):
    """/dev/null and /dev/full as the metrics file, in a private mount namespace with a /dev of
    the test's own (a tmpfs with fresh nodes): harmless to the machine's /dev either way."""
    since = len(FAILS)
    if os.geteuid() != 0:
        print("skipped: /dev (root only: a private mount namespace)", flush=True)
        return
    env = dict(os.environ, LD_LIBRARY_PATH=t.fake_dir, WORK=t.work, SHIM=t.shim,
               PROGRAM=t.program, CUDAPOOL_METRICS_INTERVAL="1")
    for k in ("CUDAPOOL_LOG", "CUDAPOOL_SUMMARY", "CUDAPOOL_CONTROL", "LD_PRELOAD"):
        env.pop(k, None)
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", NAMESPACE],
                           env=env, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        print("skipped: /dev (no unshare here)", flush=True)
        return
    if r.returncode == 77 or (r.returncode != 0 and "unshare" in r.stderr):
        print("skipped: /dev (no private mount namespace here: %s)" % r.stderr.strip()[-200:],
              flush=True)
        return
    lines = r.stdout.splitlines()
    for target in ("/dev/null", "/dev/full"):
        line = next((x for x in lines if x.startswith(target + " ")), "")
        check(line == target + " status 0 character special file",
              "%s in a private /dev: %r (%s)" % (target, line, r.stderr[-300:]))
        err = open(os.path.join(t.work, "ns" + target[5:], "stderr")).read()
        check("nothing is created in /dev" in err and target in err,
              "%s: the warning: %r" % (target, err[-300:]))
    before = next((x for x in lines if x.startswith("dev before: ")), "?")[len("dev before: "):]
    after = next((x for x in lines if x.startswith("dev after: ")), "!")[len("dev after: "):]
    check(before == after, "/dev before: %s; after: %s" % (before, after))
    passed(since, "/dev/null and /dev/full (in a private /dev): still character devices, nothing made in "
       "/dev; %s" % open(os.path.join(t.work, "nsnull", "stderr")).read().strip())


def main():
    t = Test(sys.argv)
    try:
        free_name(t)
        taken(t, "a user's file", write_file)
        taken(t, "a symbolic link to a user's file", make_link)
        taken(t, "a dangling symbolic link", lambda p: os.symlink(p + ".nowhere", p) or True)
        taken(t, "a FIFO", lambda p: os.mkfifo(p) or True)
        taken(t, "a character device outside /dev", make_chardev)
        own_log(t)
        changed_midway(t, "replaced", replace_with_users, "was replaced by another file")
        changed_midway(t, "removed", os.unlink, "was removed")
        dev_shm(t)
        in_dev(t)
    finally:
        subprocess.run(["rm", "-rf", t.work])


if __name__ == "__main__":
    main_guard(main)
