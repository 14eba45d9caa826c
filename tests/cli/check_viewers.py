#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/cli/check_viewers.py: checks the files `cudapool export` writes against what their viewers
need (/work/shared/VIEWERS.md; PyTorch's torch/utils/viz/MemoryViz.js, process_alloc_data.js and
torch/cuda/_memory_viz.py as read on PyTorch main), independently of the exporter's code:

  check_viewers.py memviz SNAPSHOT REPORT.json [--pending N] [--symbolized] [--truncated]
  check_viewers.py perfetto TRACE.json REPORT.json [--max-points N] [--max-bytes B]

REPORT.json: `cudapool report --json` of the same log(s), whose figures the file must repeat.

memviz: the pickle loads with plain Python (no class, no torch), protocol 2 to 4 and only the
opcodes the viewer's own reader knows; plain types; the top-level keys; each segment's fields, its
blocks in address order covering it exactly, their states, the segment's totals; per device the
totals at the end equal the report's current figures (reserved, allocated, active, allocations)
and the trace's actions the log's; every alloc of the trace ends (free_completed, or a block still
active at the end); a block whose free_requested ends the trace is active_pending_free and every
active_pending_free block has one; the Allocator State History's backward replay (the viewer's
rules) never needs a segment or a block the state does not have, and every block lies in a segment
at every event; oom entries have device_free and no addr.
perfetto: valid JSON; one pid per log with process_name and process_sort_index (= the report's
rank); counter tracks with non-empty numeric args, ts never decreasing, at most N points, peaks of
allocated and reserved equal to the report's (and at its time when the header has start_t_ns),
reserved = allocated + fenced + free (four counters, a track each); instants process-scoped with ts never decreasing; size.

Exit 0 when every check passes; 1 with each failure on stderr.
"""
import argparse
import bisect
import collections
import io
import json
import pickle
import pickletools
import sys

FAILS = []
# The opcodes of the unpickler in MemoryViz.js (anything else: "UNKNOWN OPCODE").
VIEWER_OPCODES = {
    "PROTO", "FRAME", "STOP", "MARK", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "DICT", "LIST",
    "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "SETITEM", "SETITEMS", "APPEND", "APPENDS", "BININT",
    "BININT1", "BININT2", "LONG1", "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE", "NONE",
    "NEWTRUE", "NEWFALSE", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET"}
STATES = {"active_allocated", "active_pending_free", "inactive"}
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom")
SEGMENT_KEYS = ("device", "address", "total_size", "allocated_size", "active_size",
                "requested_size", "stream", "segment_type", "segment_pool_id", "is_expandable",
                "frames", "blocks")
BLOCK_KEYS = ("address", "size", "requested_size", "state", "frames")
ENTRY_KEYS = ("action", "size", "stream", "time_us", "compile_context", "user_metadata",
              "frames")


def fail(what):
    FAILS.append(what)
    print("FAIL: " + what, file=sys.stderr)


def check(cond, what):
    if not cond:
        fail(what)
    return cond


class PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("the pickle names a class: %s.%s" % (module, name))


def plain(x, path="snapshot"):
    """Whether x holds only dicts with str keys, lists, tuples, ints, floats, str, bool, None."""
    if x is None or type(x) in (int, float, str, bool):
        return True
    if type(x) in (list, tuple):
        return all(plain(y, path) for y in x)
    if type(x) is dict:
        return all(type(k) is str and plain(y, path + "." + k) for k, y in x.items())
    fail("%s: a %s, not a plain object" % (path, type(x).__name__))
    return False


def load_snapshot(path):
    data = open(path, "rb").read()
    if path.endswith(".json"):
        return json.loads(data.decode("utf-8"))
    check(data[:1] == b"\x80", "the pickle does not start with PROTO")
    check(2 <= data[1] <= 4, "pickle protocol %d: the viewer reads 2 to 4" % data[1])
    used = collections.Counter(op.name for op, _, _ in pickletools.genops(data))
    unknown = sorted(set(used) - VIEWER_OPCODES)
    check(not unknown, "pickle opcodes the viewer does not read: %s" % unknown)
    return PlainUnpickler(io.BytesIO(data)).load()


def merged_trace(trace):
    """The trace as the viewer annotates it: a free_requested directly followed by the
    free_completed of the same address becomes one 'free'."""
    out = []
    for e in trace:
        if (e["action"] == "free_completed" and out and out[-1]["action"] == "free_requested"
                and out[-1].get("addr") == e.get("addr")):
            out[-1] = dict(out[-1], action="free")
            continue
        out.append(e)
    return out


def replay_backwards(dev, segments, trace):
    """The Allocator State History's backward replay from the final state, with its rules."""
    segs = sorted([s["address"], s["total_size"], s["stream"]] for s in segments)
    blocks = {}
    for s in segments:
        addr = s["address"]
        for b in s["blocks"]:    # the viewer's own address: segment address + sizes before
            if b["state"] != "inactive":
                blocks[addr] = [b["size"], b["state"] == "active_pending_free"]
            addr += b["size"]

    def check_blocks(i):
        starts = [s[0] for s in segs]
        for a in blocks:
            j = bisect.bisect_right(starts, a) - 1
            if j < 0 or a >= segs[j][0] + segs[j][1]:
                return fail("device %d: at trace entry %d block 0x%x lies in no segment (the "
                            "viewer fails drawing it)" % (dev, i, a))
        return True

    events = merged_trace(trace)
    full = len(events) * max(1, len(blocks)) < 3000000
    check_blocks(len(events) - 1)
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        a, act = e.get("addr"), e["action"]
        if act == "free":
            blocks[a] = [e["size"], False]
        elif act == "free_requested":
            if not check(a in blocks, "device %d: trace entry %d free_requested 0x%x: the state "
                         "has no such block (the viewer fails)" % (dev, i, a)):
                return
            blocks[a][1] = False
        elif act == "free_completed":
            blocks[a] = [e["size"], True]
        elif act == "alloc":
            blocks.pop(a, None)
        elif act == "segment_free":
            bisect.insort(segs, [a, e["size"], e["stream"]])
        elif act == "segment_unmap":
            j = bisect.bisect_left(segs, [a, e["size"], e["stream"]])
            segs.insert(j, [a, e["size"], e["stream"]])
            if j + 1 < len(segs) and a + e["size"] == segs[j + 1][0] and \
                    segs[j + 1][2] == e["stream"]:
                segs[j][1] += segs.pop(j + 1)[1]
            if j > 0 and segs[j - 1][0] + segs[j - 1][1] == a and segs[j - 1][2] == e["stream"]:
                segs[j - 1][1] += segs.pop(j)[1]
        elif act == "segment_alloc":
            hit = [s for s in segs if s[0] == a]
            if not check(hit, "device %d: trace entry %d segment_alloc 0x%x: no such segment in "
                         "the state (the viewer removes another)" % (dev, i, a)):
                return
            segs.remove(hit[0])
        elif act == "segment_map":
            end = a + e["size"]
            hit = [s for s in segs if s[0] <= a and end <= s[0] + s[1]]
            if not check(hit, "device %d: trace entry %d segment_map 0x%x: no segment holds it "
                         "(the viewer fails)" % (dev, i, a)):
                return
            s = hit[0]
            s_end = s[0] + s[1]
            if s[0] == a:
                s[0], s[1] = end, s[1] - e["size"]
                if s[1] == 0:
                    segs.remove(s)
            elif s_end == end:
                s[1] -= e["size"]
            else:
                s[1] = a - s[0]
                segs.append([end, s_end - end, s[2]])
            segs.sort()
        if full or i % 50 == 0:
            if not check_blocks(i - 1):
                return


def check_memviz(args):
    snap = load_snapshot(args.file)
    if not plain(snap):
        return
    rep = json.load(open(args.report))
    for key in ("segments", "device_traces", "allocator_settings", "external_annotations"):
        check(key in snap, "top level: no %s" % key)
    check(isinstance(snap.get("allocator_settings"), dict), "allocator_settings is not a dict")
    traces = snap["device_traces"]
    devs = [int(k) for k in rep["devices"]]
    check(len(traces) == max(devs + [d["id"] for d in (rep["header"] or {}).get("devices", [])])
          + 1, "device_traces: %d lists, not one per device ordinal" % len(traces))
    by_dev = collections.defaultdict(list)
    for s in snap["segments"]:
        for k in SEGMENT_KEYS:
            check(k in s, "segment without %s" % k)
        if not all(k in s for k in SEGMENT_KEYS):
            continue
        by_dev[s["device"]].append(s)
        where = "device %d segment 0x%x" % (s["device"], s["address"])
        check(s["segment_type"] in ("small", "large"), where + ": segment_type")
        check(type(s["is_expandable"]) is bool, where + ": is_expandable not a bool")
        pool = s["segment_pool_id"]
        check(type(pool) in ((list,) if args.file.endswith(".json") else (tuple,))
              and len(pool) == 2 and all(type(x) is int for x in pool),
              where + ": segment_pool_id is not a pair of ints (a tuple in a pickle)")
        check(s["address"] < 1 << 53, where + ": address not exact in a JavaScript number")
        addr = s["address"]
        totals = collections.Counter()
        for b in s["blocks"]:
            for k in BLOCK_KEYS:
                check(k in b, where + ": block without %s" % k)
            check(b.get("address") == addr, where + ": block at 0x%x, expected 0x%x (blocks "
                  "not in address order, or a gap)" % (b.get("address", -1), addr))
            check(b.get("state") in STATES, where + ": block state %r" % b.get("state"))
            check(b.get("size", 0) > 0, where + ": a block of size 0")
            if b.get("state") != "inactive":
                check(0 <= b["requested_size"] <= b["size"], where + ": requested_size")
                totals["active"] += b["size"]
                totals["requested"] += b["requested_size"]
            if b.get("state") == "active_allocated":
                totals["allocated"] += b["size"]
                totals["allocations"] += 1
            totals["pending"] += b.get("state") == "active_pending_free"
            addr += b.get("size", 0)
        check(addr == s["address"] + s["total_size"], where + ": blocks cover %d bytes, not %d"
              % (addr - s["address"], s["total_size"]))
        check(totals["allocated"] == s["allocated_size"], where + ": allocated_size")
        check(totals["active"] == s["active_size"], where + ": active_size")
        check(totals["requested"] == s["requested_size"], where + ": requested_size")
    pending_total = 0
    actions = collections.Counter()
    for dev, segs in sorted(by_dev.items()):
        segs.sort(key=lambda s: s["address"])
        for x, y in zip(segs, segs[1:]):
            check(x["address"] + x["total_size"] <= y["address"],
                  "device %d: segments 0x%x and 0x%x overlap" % (dev, x["address"], y["address"]))
    for dev in range(len(traces)):
        segs = by_dev.get(dev, [])
        stats = (rep["devices"].get(str(dev)) or {}).get("stats") or {}
        blocks = [b for s in segs for b in s["blocks"]]
        figures = {"reserved_bytes.all.current": sum(s["total_size"] for s in segs),
                   "allocated_bytes.all.current": sum(s["allocated_size"] for s in segs),
                   "active_bytes.all.current": sum(s["active_size"] for s in segs),
                   "allocation.all.current": sum(b["state"] == "active_allocated"
                                                 for b in blocks)}
        for name, mine in figures.items():
            if name in stats:
                check(mine == stats[name], "device %d: %s is %d in the snapshot, %d in the "
                      "report" % (dev, name, mine, stats[name]))
        trace = traces[dev]
        last = None
        open_allocs, requested = {}, {}
        for i, e in enumerate(trace):
            for k in ENTRY_KEYS:
                check(k in e, "device %d trace entry %d: no %s" % (dev, i, k))
            act = e.get("action")
            check(act in ACTIONS, "device %d trace entry %d: action %r" % (dev, i, act))
            if act == "oom":
                check("device_free" in e and "addr" not in e,
                      "device %d trace entry %d: an oom needs device_free, no addr" % (dev, i))
            else:
                check("addr" in e, "device %d trace entry %d: no addr" % (dev, i))
            if last is not None:
                check(e["time_us"] >= last, "device %d trace entry %d: time_us goes back"
                      % (dev, i))
            last = e["time_us"]
            if not e.get("user_metadata"):
                actions[act] += 1
            a = e.get("addr")
            if act == "alloc":
                check(a not in open_allocs, "device %d trace entry %d: alloc of 0x%x, which is "
                      "allocated" % (dev, i, a))
                open_allocs[a] = i
            elif act == "free_requested":
                check(a in open_allocs or args.truncated, "device %d trace entry %d: "
                      "free_requested of 0x%x without its alloc" % (dev, i, a))
                requested[a] = i
            elif act == "free_completed":
                check(a in open_allocs or args.truncated, "device %d trace entry %d: "
                      "free_completed of 0x%x without its alloc" % (dev, i, a))
                open_allocs.pop(a, None)
                requested.pop(a, None)
        states = {b["address"]: b["state"] for b in blocks}
        for a, i in open_allocs.items():
            check(states.get(a) in ("active_allocated", "active_pending_free"),
                  "device %d: the alloc of 0x%x (trace entry %d) never ends and the block is "
                  "not active at the end" % (dev, a, i))
        for a, i in requested.items():
            check(states.get(a) == "active_pending_free", "device %d: the trace ends with the "
                  "free_requested of 0x%x (entry %d), but the block is %s" % (
                      dev, a, i, states.get(a, "not in the snapshot")))
        for a, st in states.items():
            if st == "active_pending_free":
                pending_total += 1
                check(a in requested or args.truncated, "device %d: block 0x%x is "
                      "active_pending_free without a free_requested ending the trace"
                      % (dev, a))
        replay_backwards(dev, segs, trace)
    for act in ACTIONS:
        check(actions[act] == rep["actions"].get(act, 0) or args.truncated,
              "trace: %d %s entries, the log has %d" % (actions[act], act,
                                                      rep["actions"].get(act, 0)))
    leaks = rep["leaks"]["count"]
    allocated_blocks = sum(b["state"] == "active_allocated" for s in snap["segments"]
                           for b in s["blocks"])
    check(allocated_blocks == leaks, "%d active_allocated blocks, the report has %d blocks "
          "allocated at the end" % (allocated_blocks, leaks))
    if args.pending is not None:
        check(pending_total == args.pending, "%d active_pending_free blocks, expected %d"
              % (pending_total, args.pending))
    if args.symbolized:
        names = [f["name"] for s in snap["segments"] for b in s["blocks"] for f in b["frames"]]
        check(any("+0x" in n for n in names), "no block frame with a symbol")
        check(all(set(f) == {"name", "filename", "line"} for s in snap["segments"]
                  for b in s["blocks"] for f in b["frames"]), "a frame not {name, filename, line}")
    print("memviz: %d segments, %d trace entries, %d pending blocks: %s" % (
        len(snap["segments"]), sum(len(t) for t in traces), pending_total,
        "FAILED" if FAILS else "ok"))


def check_perfetto(args):
    import os
    size = os.path.getsize(args.file)
    if args.max_bytes:
        check(size <= args.max_bytes, "%d bytes, more than %d" % (size, args.max_bytes))
    doc = json.load(open(args.file))
    rep = json.load(open(args.report))
    reports = rep["logs"] if "logs" in rep else [rep]
    ranks = rep["ranks"] if "ranks" in rep else None
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "no traceEvents")
    events = doc["traceEvents"]
    meta = doc.get("metadata", {}).get("cudapool", {})
    logs = meta.get("logs", [])
    check(len(logs) == len(reports), "metadata: %d logs, %d given" % (len(logs), len(reports)))
    pids = sorted({e["pid"] for e in events})
    check(len(pids) == len(reports), "%d pids for %d logs" % (len(pids), len(reports)))
    names, sort_index = {}, {}
    counters = collections.defaultdict(list)
    instants = collections.defaultdict(list)
    for e in events:
        ph = e.get("ph")
        check(ph in ("M", "C", "i"), "event ph %r" % ph)
        check(type(e.get("pid")) is int, "event without an integer pid")
        if ph == "M":
            if e["name"] == "process_name":
                names[e["pid"]] = e["args"]["name"]
            elif e["name"] == "process_sort_index":
                sort_index[e["pid"]] = e["args"]["sort_index"]
            continue
        check(isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, "ts %r" % e.get("ts"))
        if ph == "C":
            a = e.get("args")
            check(isinstance(a, dict) and a and all(type(x) in (int, float) for x in a.values()),
                  "counter %s with args %r" % (e.get("name"), a))
            counters[(e["pid"], e["name"])].append(e)
        else:
            check(e.get("s") == "p", "instant %s not process-scoped" % e.get("name"))
            instants[e["pid"]].append(e)
    for i, (r, log) in enumerate(zip(reports, logs)):
        pid = log["pid"]
        check(bool(names.get(pid)), "pid %d: no process_name" % pid)
        want_rank = ranks[[x["log"] for x in ranks].index(r["log"])]["rank"] if ranks else 0
        check(sort_index.get(pid) == want_rank, "pid %d: process_sort_index %r, rank %r"
              % (pid, sort_index.get(pid), want_rank))
        check(("rank %d" % want_rank) in names.get(pid, ""), "pid %d: name %r without its rank"
              % (pid, names.get(pid)))
        host = (r["header"] or {}).get("host")
        check(not host or host in names.get(pid, ""), "pid %d: name without the host" % pid)
        ts = [x["ts"] for x in instants[pid]]
        check(ts == sorted(ts), "pid %d: instant ts go back" % pid)
        ooms = sum(x["name"] == "oom" for x in instants[pid])
        check(ooms == r["actions"].get("oom", 0), "pid %d: %d oom instants, the log has %d"
              % (pid, ooms, r["actions"].get("oom", 0)))
        h = r["header"] or {}
        for dev, dr in r["devices"].items():
            # four counters, one track each (perfetto.py COUNTERS), written at the same times:
            # merged here into one point per time with the four figures
            parts = {c: counters.get((pid, "device %s %s" % (dev, c)), [])
                     for c in ("allocated", "free", "reserved")}
            parts["fenced"] = counters.get(
                (pid, "device %s fenced (waiting for work on another stream)" % dev), [])
            track = [{"ts": x["ts"], "args": {c: parts[c][k]["args"]["bytes"]
                                              for c in parts if len(parts[c]) > k}}
                     for k, x in enumerate(parts["allocated"])]
            for c, t in parts.items():
                check(not t or len(t) == len(track), "pid %d device %s: %d %s points, %d allocated"
                      % (pid, dev, len(t), c, len(track)))
            if dr["peak_allocated"] is None and dr["peak_reserved"] is None:
                continue
            if not check(track, "pid %d: no counter track for device %s" % (pid, dev)):
                continue
            ts = [x["ts"] for x in track]
            check(ts == sorted(ts), "pid %d device %s: counter ts go back" % (pid, dev))
            if args.max_points:
                check(len(track) <= args.max_points, "pid %d device %s: %d points, more than %d"
                      % (pid, dev, len(track), args.max_points))
            for kind in ("allocated", "reserved"):
                peak = dr["peak_" + kind]
                values = [x["args"].get(kind) for x in track if kind in x["args"]]
                if peak is None or peak["bytes"] == 0:
                    continue
                if not check(values, "pid %d device %s: no %s counter" % (pid, dev, kind)):
                    continue
                check(max(values) == peak["bytes"], "pid %d device %s: peak %s %d, the report "
                      "says %d" % (pid, dev, kind, max(values), peak["bytes"]))
                if "start_t_ns" in h and "start_unix_ns" in h:
                    at = next(x["ts"] for x in track if x["args"].get(kind) == peak["bytes"])
                    want = (h["start_unix_ns"] + peak["t_ns"] - h["start_t_ns"]
                            - meta["time_zero_unix_ns"]) / 1000
                    check(abs(at - want) < 0.002, "pid %d device %s: peak %s at ts %s, not %s"
                          % (pid, dev, kind, at, want))
            for x in track:
                a = x["args"]
                if "reserved" in a:     # docs/report.md, "Words and figures"
                    check(a["reserved"] == a["allocated"] + a.get("fenced", 0) + a["free"],
                          "pid %d device %s: reserved is not allocated + fenced + free"
                          % (pid, dev))
    print("perfetto: %d events, %d bytes, %d counter tracks (%s points): %s" % (
        len(events), size, len(counters), ",".join(str(len(t)) for t in counters.values()),
        "FAILED" if FAILS else "ok"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=("memviz", "perfetto"))
    p.add_argument("file")
    p.add_argument("report")
    p.add_argument("--pending", type=int)
    p.add_argument("--symbolized", action="store_true")
    p.add_argument("--truncated", action="store_true")
    p.add_argument("--max-points", type=int)
    p.add_argument("--max-bytes", type=int)
    args = p.parse_args()
    (check_memviz if args.kind == "memviz" else check_perfetto)(args)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
