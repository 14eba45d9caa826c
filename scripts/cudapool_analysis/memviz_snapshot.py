# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/memviz_snapshot.py: the end of the memory_viz export (memviz.py): its
devices' final state and traces as the dicts and lists of a PyTorch 2.11 snapshot
(torch.cuda.memory._snapshot(), docs/exports.md), and the file written from them.

    snapshot(devices, header, clock, names) -> {"segments", "device_traces",
                                                "allocator_settings", "external_annotations"}
    write(snap, f, as_json=False)    -> pickle protocol 4 of plain objects, or JSON

Each segment's blocks are listed in address order and cover it exactly (the viewer recomputes
their addresses from the sizes), free ranges as `inactive` blocks; each frame as frames.Frames
names it ({name, filename, line}), an alloc's Python frames (CUDAPOOL_BACKTRACE=python, already
{filename, line, name}) placed among its native ones as PyTorch places them (combined()). Not
here: reading the log and keeping the trace consistent (memviz.py), naming a frame (frames.py).
"""

import bisect
import io
import json
import pickle

PICKLE_PROTOCOL = 4      # the viewer's own pickle reader takes protocols 2 to 4


def snapshot(devices, header, clock, names):
    """The snapshot's dicts; names: the log's frames.Frames (each frame's {name, filename,
    line})."""
    header = header or {}
    frames_cache = {}

    def frames_of(raw):
        if not raw:
            return []
        out = frames_cache.get(id(raw))
        if out is None or out[0] is not raw:
            out = frames_cache[id(raw)] = (raw, combined(raw, names))
        return out[1]

    ids = set(devices)
    for d in header.get("devices") or []:
        if type(d.get("id")) is int:
            ids.add(d["id"])
    traces = [[] for _ in range(max(ids) + 1 if ids else 0)]
    segments = []
    for dev in sorted(devices):
        d = devices[dev]
        out = traces[dev]
        for e in d.trace:
            out.append(entry(e, e[6], clock, frames_of))
            if len(e) > 7:   # a completion the log does not have, right after the request
                out.append(entry(("free_completed",) + tuple(e[1:6]), e[7], clock, frames_of))
        last = 0
        for x in out:    # threads' t_ns can cross a little: the later entry is held
            if x["time_us"] < last:
                x["time_us"] = last
            last = x["time_us"]
        segments.extend(device_segments(d, frames_of))
    options = header.get("options")
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": dict(options) if isinstance(options, dict) else {},
            "external_annotations": []}


def combined(raw, names):
    """An alloc's frames as PyTorch 2.11's snapshots list them (torch/csrc/profiler/
    combined_traceback.cpp symbolize()): innermost first, the native frames (raw's strings, named
    by names.memviz) with the next Python frame (raw's dicts, {filename, line, name}, innermost
    first) put before each native frame of the interpreter's loop (a name holding
    PyEval_EvalFrame), and the Python frames left after the native ones."""
    python = [f for f in raw if type(f) is dict]
    native = [names.memviz(t) for t in raw if type(t) is str]
    if not python:
        return native
    out, k = [], 0
    for f in native:
        if "PyEval_EvalFrame" in f["name"] and k < len(python):
            out.append(python[k])
            k += 1
        out.append(f)
    out.extend(python[k:])
    return out


def entry(e, meta, clock, frames_of):
    action = e[0]
    out = {"action": action}
    if action == "oom":
        out["device_free"] = e[1]
    else:
        out["addr"] = e[1]
    out["size"] = e[2]
    out["stream"] = e[3]
    out["time_us"] = max(0, clock.wall_ns(e[4])) // 1000
    out["compile_context"] = "N/A"
    out["user_metadata"] = meta
    out["frames"] = frames_of(e[5])
    return out


def device_segments(d, frames_of):
    """The device's segments at the end, in address order, each with its blocks covering it."""
    regions = [(r.base, r.base + r.size, r) for r in d.segments.values()]
    regions += [(s, e, r) for r in d.expandable.values() for s, e in r.ranges]
    regions.sort(key=lambda x: x[0])
    blocks = sorted(d.blocks.items())
    starts = [p for p, _ in blocks]
    placed = 0
    out = []
    for start, end, r in regions:
        seg_blocks = []
        cursor = start
        allocated = active = requested = 0
        i = bisect.bisect_left(starts, start)
        while i < len(blocks) and blocks[i][0] < end:
            p, b = blocks[i]
            i += 1
            if p < cursor or p + b.size > end:
                d.count["block overlapping another or its segment's end (left out)"] += 1
                continue
            if p > cursor:
                seg_blocks.append(inactive(cursor, p - cursor))
            state = "active_pending_free" if b.pending else "active_allocated"
            seg_blocks.append({"address": p, "size": b.size, "requested_size": b.requested,
                               "state": state, "frames": frames_of(b.frames)})
            if not b.pending:
                allocated += b.size
            active += b.size
            requested += b.requested
            cursor = p + b.size
            placed += 1
        if cursor < end:
            seg_blocks.append(inactive(cursor, end - cursor))
        out.append({"device": d.dev, "address": start, "total_size": end - start,
                    "allocated_size": allocated, "active_size": active,
                    "requested_size": requested, "stream": r.stream,
                    "segment_type": "small" if r.small() else "large",
                    "segment_pool_id": (0, 0), "is_expandable": r.expandable, "frames": [],
                    "blocks": seg_blocks})
    if placed < len(blocks):
        d.count["block outside every segment at the end (left out)"] += len(blocks) - placed
    return out


def inactive(address, size):
    return {"address": address, "size": size, "requested_size": 0, "state": "inactive",
            "frames": []}


def write(snap, f, as_json=False):
    """Writes the snapshot to a binary file: pickle protocol 4, or JSON (UTF-8)."""
    if as_json:
        text = io.TextIOWrapper(f, encoding="utf-8")
        json.dump(snap, text, separators=(",", ":"))
        text.flush()
        text.detach()
    else:
        pickle.dump(snap, f, protocol=PICKLE_PROTOCOL)
