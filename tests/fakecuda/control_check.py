#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/fakecuda/control_check.py: the control endpoint (CUDAPOOL_CONTROL, CUDAPOOL_METRICS,
docs/control.md) through the fake driver. control_workload allocates and frees for a few seconds
while this test asks it, many times, from outside: stats (text, JSON), prometheus, empty-cache,
snapshot (the CLI and raw requests); then:
  - the program's result is that of a run with the same steps and no endpoint (it stamps and
    checks every block), and the figures asked once it was quiet equal its summary at exit (the
    log's summary line and the CUDAPOOL_SUMMARY table); each empty-cache answer equals the
    segment_free events logged before its empty_cache event, which names the asking pid;
  - the socket is 0600 in a 0700 directory and removed at exit; the metrics file always parses
    as Prometheus text while it is rewritten, and is removed at exit; `cudapool top --once` lists
    the process (and removes a dead process's socket); a live snapshot's segments and blocks agree with the statistics;
    `snapshot -o` writes mode 0600 and never through a link planted at OUT.tmp (issue 26);
  - hostile clients (control_hostile.py) neither crash nor stall the program;
  - without the variables there is no thread and no socket.
Usage: control_check.py <control_workload> <libcudapool.so> <fake libcuda dir> <scripts dir>
"""
import json
import os
import pickle
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from control_lib import Run, check, fail, log_lines, main_guard, ok, parse_prometheus, table_lines, value  # noqa: E402
import control_hostile  # noqa: E402


class Test:
    def __init__(self, argv):
        self.program, self.shim, self.fake_dir, self.scripts, self.replay = argv[1:6]
        self.work = tempfile.mkdtemp(prefix="cudapool-control-")
        os.chmod(self.work, 0o700)
        self.xdg = os.path.join(self.work, "xdg")
        os.mkdir(self.xdg, 0o700)
        sys.path.insert(0, self.scripts)
        from cudapool_analysis import control
        self.control = control
        self.sock_dir = os.path.join(self.xdg, "cudapool")

    def cli(self, *args, check_rc=0, timeout=30):
        env = dict(os.environ, PYTHONPATH=self.scripts, XDG_RUNTIME_DIR=self.xdg)
        env.pop("CUDAPOOL_CONTROL", None)
        env.pop("LD_PRELOAD", None)
        r = subprocess.run([sys.executable, "-m", "cudapool_analysis"] + list(args), env=env,
                           capture_output=True, text=True, timeout=timeout)
        if check_rc is not None:
            check(r.returncode == check_rc, "cudapool %s: status %d, want %d: %s" % (
                " ".join(args), r.returncode, check_rc, r.stderr[-400:]))
        return r

    def socket_of(self, pid):
        return os.path.join(self.sock_dir, "%d.sock" % pid)

    def ask(self, pid, request):
        return self.control.ask(self.socket_of(pid), request, 10.0)


def check_permissions(t, run):
    d = os.lstat(t.sock_dir)
    check(stat.S_ISDIR(d.st_mode) and stat.S_IMODE(d.st_mode) == 0o700 and d.st_uid == os.geteuid(),
          "the socket directory: mode %o, owner %d" % (stat.S_IMODE(d.st_mode), d.st_uid))
    s = os.lstat(t.socket_of(run.pid))
    check(stat.S_ISSOCK(s.st_mode) and stat.S_IMODE(s.st_mode) == 0o600 and s.st_uid == os.geteuid(),
          "the socket: mode %o, owner %d" % (stat.S_IMODE(s.st_mode), s.st_uid))
    ok("the socket %s is 0600 in a 0700 directory of the user's" % t.socket_of(run.pid))


def ask_many(t, run, seconds=3.0):
    """Every kind of request, over and over, while the program runs. Returns the empty-cache
    answers (in order) and how many requests were made."""
    pid, counts, empties = run.pid, {}, []
    start_steps, deadline = run.progress(), time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        kind = ("stats", "stats json", "prometheus", "empty-cache", "snapshot")[i % 5]
        body = t.ask(pid, kind)
        if kind == "stats json":
            j = json.loads(body)
            check(j["schema"] == "cudapool.control/1" and j["pid"] == pid, "stats json header")
        elif kind == "prometheus":
            try:
                samples = parse_prometheus(body)
                check(value(samples, "cudapool_reserved_bytes", pid=pid, device=0, pool="all")
                      is not None, "prometheus: no cudapool_reserved_bytes of device 0")
            except ValueError as e:
                fail("prometheus text: %s" % e)
        elif kind == "empty-cache":
            j = json.loads(body)
            check(not j.get("refused") and j["requested_by"] == os.getpid(), "empty-cache: %s" % j)
            empties.append(j)
        elif kind == "snapshot" and counts.get(kind, 0) % 3 == 0:
            snap = t.control.live_snapshot(json.loads(body))
            check(all(sum(b["size"] for b in s["blocks"]) == s["total_size"]
                      for s in snap["segments"]), "a live snapshot's blocks do not cover its segments")
        elif kind == "stats":
            check("cudapool memory summary, device ID 0" in body, "stats text: no table")
        counts[kind] = counts.get(kind, 0) + 1
        i += 1
        if i % 25 == 0:   # the command line too, now and then
            r = t.cli("stats", str(pid))
            check("Device 0 now:" in r.stdout, "cudapool stats PID: %s" % r.stdout[:200])
            r = t.cli("empty-cache", str(pid))
            check(r.stdout.startswith("cudapool empty-cache: pid %d: released" % pid),
                  "cudapool empty-cache PID: %s" % r.stdout[:200])
            counts["cli"] = counts.get("cli", 0) + 2
    steps = run.progress() - start_steps
    check(steps > 5000, "the loop made only %d steps while it was asked" % steps)
    ok("%d requests in %.0f s (%s) while the loop made %d steps" % (
        sum(counts.values()), seconds, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
        steps))
    released = sum(p["released_bytes"] for e in empties for p in e["pools"])
    check(released > 0, "no empty-cache released anything")
    return empties


def check_metrics(t, run, path):
    """The metrics file, read while it is rewritten: every read parses, and it changes."""
    stamps, reads, deadline = set(), 0, time.monotonic() + 2.5
    while time.monotonic() < deadline:
        try:
            text = open(path).read()
        except FileNotFoundError:
            fail("the metrics file %s is missing" % path)
            return
        try:
            samples = parse_prometheus(text)
        except ValueError as e:
            fail("the metrics file does not parse (read %d): %s" % (reads, e))
            return
        stamps.add(value(samples, "cudapool_read_timestamp_seconds", pid=run.pid))
        reads += 1
        time.sleep(0.002)
    check(len(stamps) >= 2, "the metrics file was not rewritten in 2.5 s (interval 1 s)")
    left = [n for n in os.listdir(os.path.dirname(path)) if ".tmp." in n]
    ok("the metrics file parsed at each of %d reads, %d versions seen (%s)" % (
        reads, len(stamps), "temporaries seen: %s" % left if left else "no temporary left"))


def check_snapshot_files(t, run, stats):
    """cudapool snapshot PID -o FILE (pickle and JSON) once the program is quiet: its totals are
    the statistics'."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "cli"))
    import check_viewers
    st = stats["devices"][0]["stats"]
    victim = os.path.join(t.work, "victim")
    for name in ("snap-\udcff.pickle", "snap.json"):    # a name that is not UTF-8 (\xff)
        out = os.path.join(t.work, name)
        label = os.fsencode(name).decode("utf-8", "backslashreplace")
        with open(victim, "w") as f:       # a link planted at OUT.tmp leads nowhere (issue 26)
            f.write("the victim's data\n")
        os.symlink(victim, out + ".tmp")
        r = t.cli("snapshot", str(run.pid), "-o", out)
        check(label in r.stderr, label + ": its name not shown escaped: " + r.stderr[-200:])
        with open(victim, "rb") as f:
            check(f.read() == b"the victim's data\n", label + ": the file behind OUT.tmp was written")
        if os.path.lexists(out + ".tmp"):
            os.unlink(out + ".tmp")
        mode = stat.S_IMODE(os.stat(out).st_mode)
        check(mode == 0o600 & ~current_umask(), label + ": mode %o, not 0600 less the umask" % mode)
        snap = check_viewers.load_snapshot(out)
        check(check_viewers.plain(snap), label + ": not plain objects")
        segs = snap["segments"]
        totals = {k: sum(s[k] for s in segs) for k in ("total_size", "allocated_size", "active_size")}
        blocks = sum(1 for s in segs for b in s["blocks"] if b["state"] == "active_allocated")
        check(totals["total_size"] == st["reserved_bytes.all.current"]
              and totals["allocated_size"] == st["allocated_bytes.all.current"]
              and totals["active_size"] == st["active_bytes.all.current"]
              and blocks == st["allocation.all.current"],
              "%s: totals %s, %d blocks; the statistics: reserved %d allocated %d active %d, %d "
              "allocations" % (label, totals, blocks, st["reserved_bytes.all.current"],
                               st["allocated_bytes.all.current"], st["active_bytes.all.current"],
                               st["allocation.all.current"]))
        for s in segs:
            a = s["address"]
            for b in s["blocks"]:
                check(b["address"] == a and b["size"] > 0, label + ": blocks not contiguous")
                a += b["size"]
    r = t.cli("snapshot", str(run.pid), "-o", os.path.join(t.work, "xdg"), check_rc=2)
    check("is a directory" in r.stderr, "snapshot -o DIR: " + r.stderr[-200:])
    ok("cudapool snapshot -o .pickle and .json: %d segments, totals equal the statistics; mode "
       "0600, a link at OUT.tmp not followed" % len(snap["segments"]))


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_log(t, run, empties, log):
    """Each empty-cache answer is the segment_free events just before its empty_cache event,
    which names the asking pid."""
    events = [e for e in log if "seq" in e and e.get("action") != "summary"]
    marks = [i for i, e in enumerate(events) if e["action"] == "empty_cache"]
    mine = [i for i in marks if events[i].get("requested_by") == os.getpid()]
    check(len(mine) == len(empties), "%d empty_cache events name this pid, %d were asked" % (
        len(mine), len(empties)))
    others = [events[i].get("requested_by") for i in marks if i not in mine]
    check(all(isinstance(p, int) and p > 0 for p in others),
          "an empty_cache event without requested_by: %s" % others[:3])
    for i, answer in zip(mine, empties):
        freed, j = 0, i - 1
        while j >= 0 and events[j]["action"] in ("segment_free", "segment_unmap"):
            freed += events[j]["size"]
            j -= 1
        check(freed == sum(p["released_bytes"] for p in answer["pools"]),
              "empty_cache seq %d: %d bytes of segment_free, the answer said %s" % (
                  events[i]["seq"], freed, answer["pools"]))
    ok("%d empty_cache events (%d from the command line) name who asked; each answer's bytes are "
       "its segment_free events'" % (len(marks), len(others)))


def main_run(t):
    metrics = os.path.join(t.work, "metrics", "cudapool-%p.prom")
    os.mkdir(os.path.dirname(metrics))
    env = {"CUDAPOOL_CONTROL": "1", "XDG_RUNTIME_DIR": t.xdg,
           "CUDAPOOL_LOG": os.path.join(t.work, "run.jsonl"),
           "CUDAPOOL_SUMMARY": os.path.join(t.work, "summary.txt"),
           "CUDAPOOL_METRICS": metrics, "CUDAPOOL_METRICS_INTERVAL": "1"}
    run = Run(t, "main", env, ["--hold", "5000", "--rate", "20000"])
    metrics = metrics.replace("%p", str(run.pid))
    if not run.wait_for(lambda: os.path.exists(t.socket_of(run.pid)) and run.progress() > 1000,
                        "the control socket"):
        return
    check_permissions(t, run)
    empties = ask_many(t, run)
    check_metrics(t, run, metrics)
    import socket
    stale = t.socket_of(99999999)   # a dead process's (no such pid): top removes it
    socket.socket(socket.AF_UNIX).bind(stale)
    r = t.cli("top", "--once")
    check(any(line.split()[:2] == [str(run.pid), "0"] for line in r.stdout.splitlines()),
          "cudapool top --once does not list pid %d: %s" % (run.pid, r.stdout))
    check(not os.path.exists(stale) and "99999999" not in r.stdout,
          "cudapool top kept a dead process's socket")
    check(all(len(line) <= 80 for line in r.stdout.splitlines()), "top: a line over 80 columns")
    ok("cudapool top --once lists pid %d (and removed a dead process's socket):\n%s"
       % (run.pid, r.stdout.rstrip()))
    control_hostile.hostile_clients(t, run)
    if not run.quiet():
        return
    stats = json.loads(t.ask(run.pid, "stats json"))
    text = t.ask(run.pid, "stats")
    check_snapshot_files(t, run, stats)
    rc = run.finish()
    check(rc == 0, "the program's status %d: %s" % (rc, run.stderr()[-500:]))
    check(not os.path.exists(t.socket_of(run.pid)), "the socket is still there after exit")
    check(not os.listdir(os.path.dirname(metrics)), "metrics files left after exit: %s"
          % os.listdir(os.path.dirname(metrics)))
    log = log_lines(os.path.join(t.work, "run.jsonl"))
    summary = log[-1]
    check(summary.get("action") == "summary", "the log has no summary line")
    got, want = stats["devices"][0]["stats"], summary["devices"]["0"]["stats"]
    differ = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    check(not differ, "stats json once quiet vs the summary at exit: %s" % [
        (k, got.get(k), want.get(k)) for k in differ[:5]])
    table = table_lines(open(os.path.join(t.work, "summary.txt")).read())
    check(table and table == table_lines(text), "the stats table differs from CUDAPOOL_SUMMARY's")
    ok("once quiet: %d statistics equal the log's summary line, the table CUDAPOOL_SUMMARY's; "
       "socket and metrics file removed at exit" % len(got))
    check_log(t, run, empties, log)
    # The replay releases what an empty-cache from outside released (requested_by: no wait for
    # fences), so the log replays to its own summary line.
    r = subprocess.run([t.replay, "--json", os.path.join(t.work, "run.jsonl")],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "cudapool-replay: status %d: %s" % (r.returncode, r.stderr[-500:]))
    replayed = json.loads(r.stdout)["stats"] if r.returncode == 0 else {}
    differ = sorted(k for k in want if replayed.get(k) != want[k])
    check(not differ, "the replay of the log vs its summary line: %s" % [
        (k, replayed.get(k), want[k]) for k in differ[:5]])
    outside = sum(1 for e in log if e.get("action") == "empty_cache" and e.get("requested_by"))
    ok("the log, with %d empty_cache events asked from outside, replays to its summary line (%d "
       "statistics)" % (outside, len(want)))
    line = run.stdout().strip()
    steps = line.split()[2]
    ref = Run(t, "reference", {}, ["--steps", steps, "--hold", "5000"])
    ref.touch("exit")
    ref.finish()
    check(ref.stdout().strip() == line, "the result with the endpoint asked: %r; with --steps %s "
          "and none: %r" % (line, steps, ref.stdout().strip()))
    ok("the program's result is unchanged: %s" % line)


def thread_names(pid):
    """The names of a process's threads (/proc/PID/task/*/comm)."""
    names = []
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            names.append(open("/proc/%d/task/%s/comm" % (pid, task)).read().strip())
        except OSError:
            pass
    return names


def nothing_unless_asked(t):
    # Counted: the program's own thread and the shim's (named cudapool-*); a sanitizer runtime's
    # background thread (ThreadSanitizer starts one with the first pthread_create) carries the
    # program's name and is not the shim's.
    run = Run(t, "plain", {"XDG_RUNTIME_DIR": os.path.join(t.work, "xdg-plain")})
    os.mkdir(os.path.join(t.work, "xdg-plain"), 0o700)
    if run.wait_for(lambda: run.progress() > 1000, "the plain run"):
        names = thread_names(run.pid)
        check(len(names) == 1, "without CUDAPOOL_CONTROL: threads %s" % names)
        check(not os.listdir(os.path.join(t.work, "xdg-plain")), "a control directory was made")
    run.finish()
    run = Run(t, "asked", {"CUDAPOOL_CONTROL": "1", "XDG_RUNTIME_DIR": t.xdg})
    if run.wait_for(lambda: os.path.exists(t.socket_of(run.pid)) and
                    "cudapool-ctl" in thread_names(run.pid), "the asked run's control thread"):
        names = thread_names(run.pid)
        shim = [n for n in names if n.startswith("cudapool-")]
        others = [n for n in names if not n.startswith("cudapool-")]
        sanitized = "san" in os.environ.get("LD_PRELOAD", "") + t.shim
        check(shim == ["cudapool-ctl"] and (len(others) == 1 or (sanitized and len(others) == 2)),
              "with CUDAPOOL_CONTROL=1: threads %s, want the program's and cudapool-ctl" % names)
    run.finish()
    ok("without CUDAPOOL_CONTROL: one thread and no socket; with it: one thread more")


def main():
    t = Test(sys.argv)
    try:
        main_run(t)
        nothing_unless_asked(t)
        control_hostile.permissions(t)
        control_hostile.fork_child(t)
        control_hostile.exit_while_connected(t)
    finally:
        subprocess.run(["rm", "-rf", t.work])


if __name__ == "__main__":
    main_guard(main)
