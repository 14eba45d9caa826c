# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/memviz.py: a cudapool.log/1 log as a PyTorch memory snapshot, the file that
pytorch.org/memory_viz draws (Active Memory Timeline, Allocator State History, Active Cached
Segment Timeline) and torch/cuda/_memory_viz.py's `stats` and `trace` read: the segments and their
blocks at the log's end, and per device the trace of the pool's actions (docs/exports.md).

    snap, notes = from_engine(doc_part, max_entries)  # the engine's pass
    write(snap, f, as_json=False)                    # pickle protocol 4 (plain objects) or JSON

The snapshot's shape is PyTorch 2.11's (torch.cuda.memory._snapshot()): `segments` (blocks in
address order covering each segment, free ranges as `inactive` blocks), `device_traces` (one list
per device ordinal), `allocator_settings` (the header's options), `external_annotations`. The
trace is kept consistent for the viewer, which replays it backwards from the final state: what the
log leaves out (a free_completed missing, memory the driver took with its context) is written as
entries marked in `user_metadata`, and events that fit nothing (a free of an unknown block) are
left out and counted in the notes.

Frames are named by frames.Frames from the summary line (its modules: library + offset; its
leaks' symbols, for every frame of the same address) and the engine's "symbols" (functions and
source lines from the libraries' own files, where the build ids match), the same names as the HTML
page's.

The export runs the analysis engine (cudapool-analyze --memory-viz N: one pass in C++, stdin and
the replay of a request-only log included) and renders its "memviz" object (from_engine): here
each device's pool as the log leaves it (Block, Region, Device: also the live snapshot's,
control.py) and the notes (conclude).

Not here: following the events (the engine; the same pass in Python, a subclass of Device, is
the test oracle tests/oracle/memviz_pass.py, not installed), the snapshot's
dicts and the file (memviz_snapshot.py), naming a frame (frames.py), the wall clock (clock.py),
writing it whole (outfile.write_output), the command line (exportcli.py).
"""

import collections

from .clock import Clock
from .export import ExportError
from .frames import Frames, engine_symbols
from .memviz_snapshot import snapshot, write
from .terminal import escape

SMALL_SIZE = 1 << 20     # pool/constants.h kSmallSize: blocks up to 1 MiB are the small pool's
SMALL_BUFFER = 2 << 20   # kSmallBuffer: small-pool segments (and expandable pages) are 2 MiB
LARGE_TRACE = 100000     # PyTorch's default trace length (_record_memory_history max_entries)
NO_FRAMES = ()
__all__ = ["from_engine", "write", "SMALL_SIZE", "SMALL_BUFFER"]


class Block:
    __slots__ = ("size", "requested", "pending", "frames", "ctx", "stream", "seq", "region",
                 "free_entry")


class Region:
    """A segment (segment_alloc) or the address range of an expandable segment (segment_map:
    its mapped pages, `ranges`)."""
    __slots__ = ("base", "size", "stream", "ctx", "expandable", "ranges", "first_map",
                 "largest_block", "blocks")

    def __init__(self, base, size, stream, ctx, expandable):
        self.base, self.size, self.stream, self.ctx = base, size, stream, ctx
        self.expandable = expandable
        self.ranges = [] if expandable else None
        self.first_map = size
        self.largest_block = 0
        self.blocks = 0

    def small(self):
        if self.largest_block:
            return self.largest_block <= SMALL_SIZE and (self.expandable
                                                         or self.size <= SMALL_BUFFER)
        return (self.first_map if self.expandable else self.size) <= SMALL_BUFFER


class Device:
    """One device's pool as its events leave it, and the trace of its actions. Trace entries are
    (action, addr, size, stream, t_ns, frames, user_metadata); a free_requested entry is a list,
    to which a completion right after it may be appended (its block's free_completed is missing)."""

    def __init__(self, dev, max_entries):
        self.dev = dev
        self.trace = collections.deque(maxlen=max_entries) if max_entries else []
        self.add = self.trace.append
        self.blocks = {}        # ptr -> Block (alloc .. free_completed)
        self.segments = {}      # base -> Region (segment_alloc .. segment_free)
        self.expandable = {}    # range base -> Region (segment_map ...)
        self.free_requested = 0
        self.free_completed = 0
        self.regions_seen = 0   # segment_alloc and segment_map events
        self.count = collections.Counter()   # what did not fit, by kind


def check_decisions(devices, name):
    """ExportError for a log with allocations but no pool decisions."""
    if any(d.count["alloc outside every segment (left out)"] and not d.regions_seen
           for d in devices.values()):
        raise ExportError("%s has allocations but no pool decisions (no segment events): a "
                          "memory_viz snapshot needs the pool's segments" % name)


def conclude(devices, header, summary, clock, max_entries, left_out, device_notes, malformed,
             symbols=None):
    """(snapshot, notes) of the devices as the log leaves them (dev -> Device, in the order first
    seen), whoever followed the log (the engine: from_engine(), or the test oracle's build());
    symbols: what the libraries' own files say of the frames (frames.Frames)."""
    notes = ["device %d: the log has no free_completed events: blocks leave the cache at "
             "free_requested" % d.dev for d in devices.values()
             if d.free_completed == 0 and d.free_requested > 0]
    snap = snapshot(devices, header, clock, Frames(summary, symbols))
    for d in sorted(devices.values(), key=lambda d: d.dev):
        for what, n in sorted(d.count.items()):
            notes.append("device %d: %d %s" % (d.dev, n, what))
        if max_entries and len(d.trace) == max_entries:
            notes.append("device %d: the trace keeps at most its last %d entries (--max-entries)"
                         % (d.dev, max_entries))
        elif len(d.trace) > LARGE_TRACE:
            notes.append("device %d: %d trace entries; the browser may be slow to draw them "
                         "(--max-entries N keeps the last N)" % (d.dev, len(d.trace)))
    if left_out:
        notes.append("left out (no memory_viz counterpart): " + ", ".join(
            "%s x%d" % (escape(a), n) for a, n in sorted(left_out.items())))
    notes.extend(device_notes)     # devices left out (the engine's device gate)
    if malformed:
        notes.append("%d malformed lines skipped (cudapool report lists them)" % malformed)
    return snap, notes


def from_engine(part, max_entries, name="the log"):
    """(snapshot, notes) from the engine's "memviz" object of a log (cudapool-analyze --memory-viz
    N: memviz_trace.h, the port of the Python pass tests/oracle/memviz_pass.py, which it follows
    exactly). Raises ExportError for a log with allocations but no pool decisions."""
    stacks = [tuple(x) if x else NO_FRAMES for x in part["stacks"]]
    devices = {}
    for x in part["devices"]:
        d = devices[x["dev"]] = Device(x["dev"], 0)
        d.free_requested, d.free_completed = x["free_requested"], x["free_completed"]
        d.regions_seen = x["regions_seen"]
        d.count.update({what: n for what, n in x["count"]})
        d.trace = [(e[0], e[1], e[2], e[3], e[4], stacks[e[5]]) + tuple(e[6:]) for e in x["trace"]]
        for key, expandable in (("segments", d.segments), ("expandable", d.expandable)):
            for base, size, stream, exp, first_map, largest, ranges in x[key]:
                r = expandable[base] = Region(base, size, stream, 0, exp)
                r.first_map, r.largest_block = first_map, largest
                if exp:
                    r.ranges = [list(p) for p in ranges]
        for ptr, size, requested, pending, frames in x["blocks"]:
            b = d.blocks[ptr] = Block()
            b.size, b.requested, b.pending, b.frames = size, requested, pending, stacks[frames]
    check_decisions(devices, name)
    clock = Clock(part["header"])
    if part["first_t_ns"] is not None:
        clock.wall_ns(part["first_t_ns"])
    return conclude(devices, part["header"], part["summary"], clock, max_entries,
                    {a: n for a, n in part["left_out"]}, part["device_notes"], part["malformed"],
                    engine_symbols(part.get("symbols")))
