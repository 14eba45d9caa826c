"""cudapool_analysis/perfetto.py: cudapool.log/1 logs (the ranks of one job) as one Chrome trace
event JSON file, which ui.perfetto.dev and chrome://tracing open (docs/exports.md):

    {"traceEvents": [...], "displayTimeUnit": "ns", "metadata": {"cudapool": {...}}}

One process (pid 1, 2, ... in the order given) per log, named by its rank, host and devices and
sorted by rank (`process_name`, `process_sort_index`); per device a counter track "device N
memory" with allocated, reserved, active and fragmentation (reserved - allocated) bytes, the
figures accounting.py counts (its first pass, observed after each event: not counted again here),
downsampled to at most --max-points points per device with every peak exact (downsample.py);
instant events for oom, segment_refused, empty_cache, segment_alloc/free/map/unmap,
context_dropped and stream events (at most --max-instants of each action per device, the rest
counted in the metadata). A counter that goes negative or reaches 2**64 bytes (a log whose events
are inconsistent) is drawn as it is, and a note names it impossible. Times: microseconds from the
earliest start of the logs, on the wall clock (clock.Clock: start_unix_ns + (t_ns -
start_t_ns); a log without start_t_ns has its first event at its start_unix_ns, said in the
metadata). Each log is read once, streaming.

Not here: the counting (accounting.py), the wall clock (clock.py), replaying a request-only log
(export.pool_log), writing the file whole (outfile.write_output), the command line
(exportcli.py).
"""

import json

from . import vocabulary as v
from .accounting import first_pass
from .clock import Clock, clock_note, time_zero_ns
from .downsample import Downsampler
from .export import check_logs, pool_log
from .inputs import ended_early
from .reader import LogError, display_name, not_a_log, open_log
from .report import header_rank

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
COUNTERS = ("allocated", "reserved", "active", "fragmentation")


class LogTrace:
    """One log's process: its counters (a Downsampler per device) and instants, filled by
    first_pass's observer."""

    def __init__(self, pid, header, base_ns, max_points, max_instants):
        self.pid = pid
        self.clock = Clock(header, fallback_ns=base_ns)
        self.base_ns = base_ns
        self.max_points = max_points
        self.max_instants = max_instants
        self.series = {}          # dev -> Downsampler
        self.instants = []        # (wall ns, name, args)
        self.instant_counts = {}  # (dev, action) -> events
        self.last_instant = None

    def observe(self, d, line, seq, t_ns, ctx, action, ptr, size, block_size, segment, obj):
        wall = self.clock.wall_ns(t_ns)
        if action in STATE:
            s = self.series.get(d.dev)
            if s is None:
                s = self.series[d.dev] = Downsampler(self.max_points, len(COUNTERS))
            a, r = d.allocated_bytes[0], d.reserved_bytes[0]
            s.add(wall, (a, r, d.active_bytes[0], r - a))
        if action in INSTANTS:
            key = (d.dev, action)
            n = self.instant_counts.get(key, 0) + 1
            self.instant_counts[key] = n
            if n > self.max_instants:
                return
            args = {"device": d.dev, "size": size}
            if ptr:
                args["ptr"] = "0x%x" % ptr
            for name in INSTANT_FIELDS:
                x = obj.get(name)
                if type(x) in (int, str, bool) and not (name == "ctx" and not x):
                    args[name] = x
            if self.last_instant is not None and wall < self.last_instant:
                wall = self.last_instant   # one process track: times never go back
            self.last_instant = wall
            self.instants.append((wall, action, args))

    def impossible(self, run):
        """A note on the counters written that take values no device has (negative, or 2**64
        bytes or more), or None: each series keeps its lowest and highest points, so these are
        found exactly."""
        odd = []
        for dev in sorted(self.series):
            written = COUNTERS if run.devices[dev].num_device_alloc > 0 else COUNTERS[::2]
            points = self.series[dev].points()
            if any(not v.fits(p[COUNTERS.index(name)], v.UINT)
                   for name in written for _, p in points):
                odd.append(dev)
        if not odd:
            return None
        return ("%s counters that take impossible values (negative, or 2**64 bytes or more: the "
                "log is inconsistent), drawn as they are" % device_list(odd))

    def ts(self, wall):
        return round((wall - self.base_ns) / 1000, 3)

    def events(self, run, name, sort_index):
        """The log's trace events: names, then each device's counters, then the instants."""
        yield {"ph": "M", "pid": self.pid, "tid": 0, "name": "process_name",
               "args": {"name": name}}
        yield {"ph": "M", "pid": self.pid, "tid": 0, "name": "process_sort_index",
               "args": {"sort_index": sort_index}}
        for dev in sorted(self.series):
            d = run.devices[dev]
            same = d.no_free_completed()     # blocks stop being active at free_requested
            reserved = d.num_device_alloc > 0
            track = "device %d memory" % dev
            for wall, (a, r, act, frag) in self.series[dev].points():
                args = {"allocated": a}
                if reserved:
                    args["reserved"] = r
                args["active"] = a if same else act
                if reserved:
                    args["fragmentation"] = frag
                yield {"ph": "C", "pid": self.pid, "tid": 0, "name": track,
                       "ts": self.ts(wall), "args": args}
        for wall, action, args in self.instants:
            yield {"ph": "i", "s": "p", "pid": self.pid, "tid": 0, "name": action,
                   "ts": self.ts(wall), "args": args}


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


def export(paths, out, max_points=MAX_POINTS, max_instants=MAX_INSTANTS):
    """Writes the trace of the logs at paths to the text file out; returns the notes. Raises
    LogError for a log that cannot be read."""
    headers = check_logs(paths)
    base_ns = time_zero_ns(headers)
    notes = []
    logs = []
    out.write('{"traceEvents":[\n')
    first = True
    for i, path in enumerate(paths):
        shown = display_name(path)     # "<stdin>", a file name's bytes that are not UTF-8 escaped
        trace = LogTrace(i + 1, headers[i], base_ns, max_points, max_instants)
        with pool_log(path) as events_path:
            replayed = events_path != path
            try:
                with open_log(events_path) as f:
                    run = first_pass(f, observe=trace.observe, request_sizes=False)
            except OSError as e:
                raise LogError("cannot read %s: %s" % (shown, e.strerror or e)) from None
        r = run.reader
        if r.header is None and r.events == 0 and r.summary is None:
            raise LogError(not_a_log(shown, r.lines, run.problems))
        header = headers[i] if headers[i] is not None else r.header   # not the replay's
        rank = header_rank(header)
        rank_from = "header" if rank is not None else "order"
        rank = rank if rank is not None else i
        devices = sorted(set(run.devices))
        name = process_name(rank, header, devices)
        for ev in trace.events(run, name, rank):
            out.write(("" if first else ",\n") + json.dumps(ev, separators=(",", ":")))
            first = False
        left = {"%d %s" % k: n - max_instants for k, n in sorted(trace.instant_counts.items())
                if n > max_instants}
        if ended_early(path):                # said by the pass, or by the replay
            notes.append(ended_early(path))
        note = clock_note(shown, trace.clock)
        if note:
            notes.append(note)
        notes.extend("%s: %s" % (shown, n) for n in r.devices.notes())   # devices left out
        if replayed:
            notes.append("%s: the log has no pool decisions: its requests were replayed under "
                         "its settings (cudapool replay), and the counters are the replay's"
                         % shown)
        bare = [dev for dev in devices
                if dev in trace.series and run.devices[dev].num_device_alloc == 0]
        if bare:
            notes.append("%s: %s no segment events: no reserved or fragmentation counter"
                         % (shown, device_list(bare)))
        odd = trace.impossible(run)
        if odd:
            notes.append("%s: %s" % (shown, odd))
        logs.append({"pid": trace.pid, "log": shown, "rank": rank, "rank_from": rank_from,
                     "host": (header or {}).get("host"), "clock": trace.clock.how,
                     "replayed": replayed, "events": r.events,
                     "devices": [{"dev": dev, "counter_points": len(trace.series[dev].points())
                                  if dev in trace.series else 0,
                                  "peak_allocated": run.devices[dev].allocated_bytes[1],
                                  "peak_reserved": run.devices[dev].reserved_bytes[1]}
                                 for dev in devices],
                     "instants_left_out": left})
    ranks = [l["rank"] for l in logs]
    for rank in sorted(set(x for x in ranks if ranks.count(x) > 1)):
        notes.append("rank %d is named by %d logs" % (rank, ranks.count(rank)))
    meta = {"schema": SCHEMA, "time_zero_unix_ns": base_ns, "ts": "microseconds from "
            "time_zero_unix_ns (wall clock)", "max_points": max_points,
            "max_instants": max_instants, "logs": logs, "notes": notes}
    out.write('\n],"displayTimeUnit":"ns","metadata":{"cudapool":%s}}\n'
              % json.dumps(meta, separators=(",", ":")))
    return notes
