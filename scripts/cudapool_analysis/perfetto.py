# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/perfetto.py: cudapool.log/1 logs (the ranks of one job) as one Chrome trace
event JSON file, which ui.perfetto.dev and chrome://tracing open (docs/exports.md):

    {"traceEvents": [...], "displayTimeUnit": "ns", "metadata": {"cudapool": {...}}}

One process (pid 1, 2, ... in the order given) per log, named by its rank, host and devices and
sorted by rank (`process_name`, `process_sort_index`); per device four counters, each a track of
its own (chrome://tracing stacks the arguments of one counter): "device N allocated", "device N
fenced (waiting for work on another stream)", "device N free" and "device N reserved", in bytes
(the words of docs/report.md, "Words and figures": free = reserved - allocated - fenced; reserved
= allocated + fenced + free), downsampled to at most --max-points points per device with every peak exact; instant events for
oom, segment_refused, empty_cache, segment_alloc/free/map/unmap, context_dropped and stream
events (at most --max-instants of each action per device, the rest counted in the metadata). A
counter that goes negative or reaches 2**64 bytes (a log whose events are inconsistent) is drawn
as it is, and a note names it impossible. Times: microseconds from the earliest start of the
logs, on the wall clock (clock.Clock: start_unix_ns + (t_ns - start_t_ns); a log without
start_t_ns has its first event at its start_unix_ns, said in the metadata).

The figures come from one run of the analysis engine over all the logs (cudapool-analyze
--perfetto, engine.run_engine; its "perfetto" object per log, docs/analysis-format.md): it reads
each log once (stdin too), replays a request-only log in process, counts, downsamples and keeps
the instants; here they are put on the wall clock and written (render). Not here: the Python pass
kept as the engine's test oracle (tests/oracle/perfetto_pass.py, not installed), the wall clock
(clock.py), writing the file whole (outfile.write_output), the command line (exportcli.py).
"""

import json
from collections import namedtuple

from . import vocabulary as v
from .clock import Clock, clock_note, time_zero_ns
from .engine import EngineOptions, run_engine
from .rank import header_rank

SCHEMA = "cudapool.perfetto/1"     # the metadata's shape
MAX_POINTS = 20000                 # counter points per device (--max-points)
MAX_INSTANTS = 2000                # instant events per device and action (--max-instants)
STATE = v.actions("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                  "segment_map", "segment_unmap", "context_dropped")
INSTANTS = v.actions("oom", "segment_refused", "empty_cache", "segment_alloc", "segment_free",
                     "segment_map", "segment_unmap", "context_dropped", "stream_created",
                     "stream_first_work")
INSTANT_FIELDS = ("block_size", "segment", "stream", "ctx", "cause", "device_free",
                  "device_total", "reserved", "allocated", "segment_size", "entry", "caller",
                  "error")
# The engine's points: (allocated, reserved, active, reserved - allocated) bytes.
POINT_FIELDS = ("allocated", "reserved", "active", "unallocated")
# The counters written, each "device N <name>" with one argument, "bytes"; a device without
# segment events has allocated only (fenced too when the log has free_completed events).
COUNTERS = ("allocated", "fenced", "free", "reserved")


def counter_name(dev, name):
    """A counter's track name: "device 0 fenced (waiting for work on another stream)"."""
    if name == "fenced":
        return "device %d fenced (%s)" % (dev, v.FIGURE_WORDS["fenced"])
    return "device %d %s" % (dev, name)


def counter_values(point, same, reserved):
    """{counter: bytes} of one engine point; same: the log has no free_completed events (no
    block is fenced); reserved: the device has segment events."""
    a, r, act, _ = point
    fenced = 0 if same else act - a
    out = {"allocated": a}
    if not same:
        out["fenced"] = fenced
    if reserved:
        out["free"] = r - a - fenced
        out["reserved"] = r
    return out

# One log's figures, whoever computed them (the engine, or the test oracle
# tests/oracle/perfetto_pass.py): shown, its name; clock, its clock.Clock; ended_early, None or what
# the input said of a cut compressed frame; device_notes, the devices left out; devices, per device
# seen (in order) a dict of dev, num_device_alloc, no_free_completed, peak_allocated, peak_reserved
# and points ([(wall ns, (allocated, reserved, active, unallocated))], None without a state
# event); instants, [(wall ns, action, args)], times never going back; instant_counts, {(dev,
# action): events}.
LogData = namedtuple("LogData", "shown header clock replayed events ended_early device_notes "
                     "devices instants instant_counts")


def from_engine(shown, part, base_ns):
    """The LogData of a log from the engine's "perfetto" object: times put on the wall clock."""
    clock = Clock(part["header"], fallback_ns=base_ns)
    if part["first_t_ns"] is not None:
        clock.wall_ns(part["first_t_ns"])    # without start_t_ns: the first event fixes it
    wall = clock.wall_ns
    devices = []
    for d in part["devices"]:
        d = dict(d)
        if d["points"] is not None:
            d["points"] = [(wall(p[0]), tuple(p[1:])) for p in d["points"]]
        devices.append(d)
    instants = []
    last = None
    for t_ns, action, dev, size, ptr, fields in part["instants"]:
        args = {"device": dev, "size": size}
        if ptr:
            args["ptr"] = "0x%x" % ptr
        args.update(fields)
        t = wall(t_ns)
        if last is not None and t < last:
            t = last                             # one process track: times never go back
        last = t
        instants.append((t, action, args))
    counts = {(dev, action): n for dev, action, n in part["instant_counts"]}
    header = part["header"] if part["header"] is not None else part["replay_header"]
    return LogData(shown, header, clock, part["replayed"], part["events"],
                   part["ended_early"], part["device_notes"], devices, instants, counts)


def device_list(devices, shown=8):
    """"device 3 has", "devices 0, 1, ... (20 devices) have"."""
    if len(devices) == 1:
        return "device %d has" % devices[0]
    names = ", ".join(str(d) for d in devices[:shown])
    return "devices %s%s have" % (names, ", ... (%d devices)" % len(devices)
                                  if len(devices) > shown else "")


def process_name(rank, header, devices):
    h = header or {}
    parts = ["rank %d" % rank]
    if isinstance(h.get("host"), str):
        parts.append(h["host"])
    if type(h.get("pid")) is int:
        parts.append("pid %d" % h["pid"])
    if devices:
        parts.append(("device " if len(devices) == 1 else "devices ")
                     + ",".join(str(x) for x in devices))
    return " | ".join(parts)


def impossible(log):
    """A note on the counters written that take values no device has (negative, or 2**64 bytes or
    more), or None: each series keeps its lowest and highest points, so these are found
    exactly."""
    odd = []
    for d in log.devices:
        if d["points"] is None:
            continue
        if any(not v.fits(x, v.UINT) for _, p in d["points"]
               for x in counter_values(p, d["no_free_completed"],
                                       d["num_device_alloc"] > 0).values()):
            odd.append(d["dev"])
    if not odd:
        return None
    return ("%s counters that take impossible values (negative, or 2**64 bytes or more: the "
            "log is inconsistent), drawn as they are" % device_list(odd))


def trace_events(log, pid, name, sort_index, base_ns):
    """The log's trace events: names, then each device's counters, then the instants."""
    def ts(wall):
        return round((wall - base_ns) / 1000, 3)
    yield {"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}}
    yield {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index",
           "args": {"sort_index": sort_index}}
    for d in log.devices:
        if d["points"] is None:
            continue
        same = d["no_free_completed"]     # blocks stop being active at free_requested
        reserved = d["num_device_alloc"] > 0
        names = {c: counter_name(d["dev"], c) for c in COUNTERS}
        for wall, point in d["points"]:
            for c, value in counter_values(point, same, reserved).items():
                yield {"ph": "C", "pid": pid, "tid": 0, "name": names[c], "ts": ts(wall),
                       "args": {"bytes": value}}
    for wall, action, args in log.instants:
        yield {"ph": "i", "s": "p", "pid": pid, "tid": 0, "name": action, "ts": ts(wall),
               "args": args}


def render(out, logs, base_ns, max_points, max_instants):
    """Writes the trace of the logs (LogData, in the order given) to the text file out; returns
    the notes."""
    notes = []
    metas = []
    out.write('{"traceEvents":[\n')
    first = True
    for i, log in enumerate(logs):
        shown = log.shown
        rank = header_rank(log.header)
        rank_from = "header" if rank is not None else "order"
        rank = rank if rank is not None else i
        devices = [d["dev"] for d in log.devices]
        name = process_name(rank, log.header, devices)
        for ev in trace_events(log, i + 1, name, rank, base_ns):
            out.write(("" if first else ",\n") + json.dumps(ev, separators=(",", ":")))
            first = False
        left = {"%d %s" % k: n - max_instants for k, n in sorted(log.instant_counts.items())
                if n > max_instants}
        if log.ended_early:
            notes.append(log.ended_early)
        note = clock_note(shown, log.clock)
        if note:
            notes.append(note)
        notes.extend("%s: %s" % (shown, n) for n in log.device_notes)   # devices left out
        if log.replayed:
            notes.append("%s: the log has no pool decisions: its requests were replayed under "
                         "its settings (cudapool replay), and the counters are the replay's"
                         % shown)
        bare = [d["dev"] for d in log.devices
                if d["points"] is not None and d["num_device_alloc"] == 0]
        if bare:
            notes.append("%s: %s no segment events: no reserved or free counter"
                         % (shown, device_list(bare)))
        odd = impossible(log)
        if odd:
            notes.append("%s: %s" % (shown, odd))
        metas.append({"pid": i + 1, "log": shown, "rank": rank, "rank_from": rank_from,
                      "host": (log.header or {}).get("host"), "clock": log.clock.how,
                      "replayed": log.replayed, "events": log.events,
                      "devices": [{"dev": d["dev"], "counter_points": len(d["points"] or ()),
                                   "peak_allocated": d["peak_allocated"],
                                   "peak_reserved": d["peak_reserved"]} for d in log.devices],
                      "instants_left_out": left})
    ranks = [m["rank"] for m in metas]
    for rank in sorted(set(x for x in ranks if ranks.count(x) > 1)):
        notes.append("rank %d is named by %d logs" % (rank, ranks.count(rank)))
    meta = {"schema": SCHEMA, "time_zero_unix_ns": base_ns, "ts": "microseconds from "
            "time_zero_unix_ns (wall clock)", "max_points": max_points,
            "max_instants": max_instants, "logs": metas, "notes": notes}
    out.write('\n],"displayTimeUnit":"ns","metadata":{"cudapool":%s}}\n'
              % json.dumps(meta, separators=(",", ":")))
    return notes


def export(paths, out, max_points=MAX_POINTS, max_instants=MAX_INSTANTS):
    """Writes the trace of the logs at paths (- for stdin) to the text file out; returns the
    notes. Raises what engine.run_engine raises (a log that cannot be read: said on stderr)."""
    from .inputs import display_name
    limits = "%d,%d" % (max_points, max_instants)
    doc = run_engine(paths, EngineOptions.export("--perfetto", limits))
    parts = [x["perfetto"] for x in doc["logs"]]
    base_ns = time_zero_ns([p["header"] for p in parts])
    logs = [from_engine(display_name(path), part, base_ns) for path, part in zip(paths, parts)]
    return render(out, logs, base_ns, max_points, max_instants)
