#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/fakecuda/idle_release_check.py: idle release (idle_release_ms) in the shim, through the
fake driver: control_workload (it allocates and frees, everything freed every 4096 steps, some
blocks kept to the end) runs under the shim with idle release on, then goes quiet for a while.
Checks, for whole segments and for expandable segments: the log has idle_release ticks and the
memory they gave back (segment_free / segment_unmap before them, the tick's size their sum); once
the program was quiet for well over the delay, every segment still reserved holds a live block
(the idle ones went back) and the fake driver holds what the log's segments hold (the driver
calls that give memory back were made); the program's own result is the one it prints without the shim's
idle release (its stamps held: nothing it still used was given back); the log replays to its own
summary line (the replay ticks at the logged ticks), and a replay with another delay simulates
its ticks from the events' times. The fake driver checks the plumbing, not a GPU's behaviour
(tests/gpu does). Usage: idle_release_check.py <control_workload> <libcudapool.so>
<directory of the fake libcuda.so.1> <scripts dir> <cudapool-replay>"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from control_lib import Run, check, fail, log_lines, main_guard, ok  # noqa: E402

STEPS = 9000  # past two of the workload's free-everything points (every 4096 steps)


class Test:
    def __init__(self, argv):
        self.program, self.shim, self.fake_dir, self.scripts, self.replay = argv[1:6]
        self.work = tempfile.mkdtemp(prefix="cudapool-idle-")


def replay(t, path, *args):
    r = subprocess.run([t.replay, "--json", *args, path], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, "cudapool-replay %s: status %d: %s" % (
        " ".join(args), r.returncode, r.stderr[-500:]))
    return json.loads(r.stdout) if r.returncode == 0 else {}


def held_segments(log):
    """The segments (base -> bytes) reserved at the end of the log, and the live blocks' segments."""
    segments, live = {}, {}
    for e in log:
        a = e.get("action")
        if a == "segment_alloc":
            segments[e["ptr"]] = e["size"]
        elif a == "segment_free":
            segments.pop(e["ptr"], None)
        elif a == "alloc":
            live[e["ptr"]] = e.get("segment", e["ptr"])
        elif a == "free_requested":
            live.pop(e["ptr"], None)
    return segments, set(live.values())


def one(t, name, conf, released_action):
    log_path = os.path.join(t.work, name + ".jsonl")
    run = Run(t, name, env={"CUDAPOOL_CONF": conf, "CUDAPOOL_LOG": log_path},
              args=["--steps", str(STEPS), "--seed", "3"])
    run.wait_for(lambda: os.path.exists(run.path("state")), "the loop's end", timeout=60)
    time.sleep(0.6)  # quiet for more than 1.25 x the delay (50 ms): idle memory goes back
    rc = run.finish()
    check(rc == 0, "%s: status %s: %s" % (name, rc, run.stderr()[-500:]))
    log = log_lines(log_path)
    # The driver gave the memory back too: the release thread makes the driver calls after
    # dropping the pool's lock (cuda_backend.h), and none may be left undone.
    driver_bytes = int(open(run.path("driver_bytes")).read())
    books = 0
    for e in log:
        a = e.get("action")
        if a in ("segment_alloc", "segment_map"):
            books += e["size"]
        elif a in ("segment_free", "segment_unmap"):
            books -= e["size"]
    check(driver_bytes == books, "%s: the fake driver holds %d bytes after the quiet period, the "
          "log's segments %d" % (name, driver_bytes, books))
    ticks = [e for e in log if e.get("action") == "idle_release"]
    released = [e for e in log if e.get("action") == released_action]
    check(ticks, "%s: no idle_release tick in the log" % name)
    check(released, "%s: no %s in the log" % (name, released_action))
    # Each tick's size is the bytes given back by the segment events just before it.
    since = 0
    for e in log:
        a = e.get("action")
        if a in ("segment_free", "segment_unmap"):
            since += e["size"]
        elif a == "idle_release":
            if e["size"] != since and since != 0:
                # an empty_cache or an OOM's release may come between; only ticks that released
                # exactly what came before them (or nothing) are expected here
                fail("%s: tick at seq %d says %d bytes, the segment events before it %d" % (
                    name, e["seq"], e["size"], since))
                break
            since = 0
        elif a in ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_map"):
            since = 0
    if released_action == "segment_free":
        segments, live_segments = held_segments(log)
        idle = [p for p in segments if p not in live_segments]
        check(not idle, "%s: %d segments still reserved at the end hold no live block: %s" % (
            name, len(idle), idle[:3]))
    summary = log[-1]
    check(summary.get("action") == "summary", "%s: the log has no summary line" % name)
    want = summary["devices"]["0"]["stats"] if summary.get("action") == "summary" else {}
    got = replay(t, log_path).get("stats", {})
    differ = sorted(k for k in want if got.get(k) != want[k])
    check(not differ, "%s: the replay vs the summary line: %s" % (
        name, [(k, got.get(k), want[k]) for k in differ[:5]]))
    other = replay(t, log_path, "--conf", conf.replace("idle_release_ms:50", "idle_release_ms:20"))
    counts = other.get("counts", {})
    check(counts.get("idle_ticks_simulated", 0) > 0 and counts.get("idle_release_events") == len(ticks),
          "%s: a replay with idle_release_ms:20 simulated no tick: %s" % (name, counts))
    check(other.get("held", {}).get("idle_ticks") == "simulated", "%s: held: %s" % (
        name, other.get("held")))
    ok("%s: %d ticks, %d %s events, %d bytes given back; replays to its summary (%d statistics); "
       "a replay at 20 ms simulated %d ticks" % (
           name, len(ticks), len(released), released_action, sum(e["size"] for e in ticks),
           len(want), counts.get("idle_ticks_simulated", 0)))
    return run.stdout()


def main():
    t = Test(sys.argv)
    plain = Run(t, "plain", args=["--steps", str(STEPS), "--seed", "3"])
    plain.wait_for(lambda: os.path.exists(plain.path("state")), "the loop's end", timeout=60)
    plain.finish()
    want = plain.stdout()
    for name, conf, action in (("segments", "idle_release_ms:50", "segment_free"),
                               ("expandable", "expandable_segments:True,idle_release_ms:50",
                                "segment_unmap")):
        got = one(t, name, conf, action)
        check(got == want, "%s: the program's result differs: %r vs %r" % (name, got, want))


if __name__ == "__main__":
    main_guard(main)
