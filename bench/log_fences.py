#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/log_fences.py: what a shim log says about one benchmark run, as one JSON line: the
summary's peaks and device calls, and how the reuse fences behaved (frees whose free_completed did
not follow at once, the most held at once, still held at exit) and which streams besides the legacy
one had work (stream_created / stream_first_work events).

  log_fences.py LOG

A benchmark helper (bench/run_torch_models.sh), not the project's reader of logs (scripts/).
"""
import json
import sys


def main():
    path = sys.argv[1]
    summary = None
    requested = {}  # ptr -> seq of free_requested still waiting
    held = held_now = held_max = frees = 0
    streams = {}
    first_work = []
    prev_action = None
    prev_ptr = None
    with open(path, "rb") as f:
        for raw in f:
            try:
                e = json.loads(raw)
            except ValueError:
                continue
            action = e.get("action")
            if action == "summary":
                summary = e
                continue
            if action == "free_requested":
                frees += 1
                requested[e["ptr"]] = e["seq"]
                held_now += 1
            elif action == "free_completed":
                if e["ptr"] in requested:
                    if not (prev_action == "free_requested" and prev_ptr == e["ptr"]):
                        held += 1
                    del requested[e["ptr"]]
                    held_now -= 1
            elif action == "stream_created":
                streams[e.get("stream", "0x0")] = {
                    "nonblocking": bool(e.get("size", 0) & 1), "seq": e["seq"],
                    "entry": e.get("entry", ""), "by": e.get("caller", "")}
            elif action == "stream_first_work":
                kind = {1: "per-thread", 2: "blocking", 3: "non-blocking", 4: "unknown"}.get(
                    e.get("size", 0), "?")
                first_work.append({"stream": e.get("stream", "0x0"), "kind": kind,
                                   "seq": e["seq"], "entry": e.get("entry", ""),
                                   "by": e.get("caller", "")})
            held_max = max(held_max, held_now - 1 if action == "free_requested" else held_now)
            prev_action, prev_ptr = action, e.get("ptr")
    out = {"frees": frees, "fenced_frees": held, "fenced_max": held_max,
           "fenced_at_exit": len(requested), "streams_created": len(streams),
           "nonblocking_created": sum(1 for s in streams.values() if s["nonblocking"]),
           "created_by": sorted({"%s %s" % (v["entry"], v["by"]) for v in streams.values()}),
           "first_work": first_work[:12]}
    if summary is not None:
        stats = {}
        for dev in summary.get("devices", {}).values():
            for k, v in dev.get("stats", {}).items():
                stats[k] = stats.get(k, 0) + v
        for k in ("reserved_bytes.all.peak", "allocated_bytes.all.peak", "num_device_alloc",
                  "num_device_free", "num_sync_all_streams"):
            out[k] = stats.get(k)
        fences = {}
        for dev in summary.get("devices", {}).values():
            for k, v in dev.get("fences", {}).items():
                fences[k] = fences.get(k, 0) + v
        out["fences"] = fences
    print(json.dumps(out))


if __name__ == "__main__":
    main()
