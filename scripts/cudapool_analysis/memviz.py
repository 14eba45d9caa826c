"""cudapool_analysis/memviz.py: a cudapool.log/1 log as a PyTorch memory snapshot, the file that
pytorch.org/memory_viz draws (Active Memory Timeline, Allocator State History, Active Cached
Segment Timeline) and torch/cuda/_memory_viz.py's `stats` and `trace` read: the segments and their
blocks at the log's end, and per device the trace of the pool's actions (docs/exports.md).

    snap, notes = from_engine(doc_part, max_entries) # the engine's pass (or build(stream, ...))
    write(snap, f, as_json=False)                   # pickle protocol 4 (plain objects) or JSON

The snapshot's shape is PyTorch 2.11's (torch.cuda.memory._snapshot()): `segments` (blocks in
address order covering each segment, free ranges as `inactive` blocks), `device_traces` (one list
per device ordinal), `allocator_settings` (the header's options), `external_annotations`. The
trace is kept consistent for the viewer, which replays it backwards from the final state: what the
log leaves out (a free_completed missing, memory the driver took with its context) is written as
entries marked in `user_metadata`, and events that fit nothing (a free of an unknown block) are
left out and counted in the notes.

Frames are named by frames.Frames from the summary line (its modules: library + offset; its
leaks' symbols, for every frame of the same address), the same names as the HTML page's.

The export runs the analysis engine (cudapool-analyze --memory-viz N: one pass in C++, stdin and
the replay of a request-only log included) and renders its "memviz" object (from_engine); build()
is the same pass in Python, kept as the oracle tests/cli/memviz_agree.sh checks the engine with.

Not here: the pool's decisions of a request-only log for build() (replayed first:
export.pool_log), the snapshot's dicts and the file (memviz_snapshot.py), naming a frame (frames.py), the wall clock
(clock.py), writing it whole (outfile.write_output), the command line (exportcli.py).
"""

import bisect
import collections

from . import vocabulary as v
from .clock import Clock
from .export import ExportError
from .frames import Frames
from .layout import add_range, remove_range
from .memviz_snapshot import snapshot, write
from .reader import LogError, LogReader, not_a_log
from .terminal import escape

SMALL_SIZE = 1 << 20     # pool/constants.h kSmallSize: blocks up to 1 MiB are the small pool's
SMALL_BUFFER = 2 << 20   # kSmallBuffer: small-pool segments (and expandable pages) are 2 MiB
LARGE_TRACE = 100000     # PyTorch's default trace length (_record_memory_history max_entries)
DRIVER_TOOK = "context_dropped: the driver took this memory with its context"
IMPLIED = "implied: the log has no %s for this block"
MAPPED = v.actions("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                   "segment_map", "segment_unmap", "oom", "context_dropped")
NO_FRAMES = ()
__all__ = ["build", "from_engine", "write", "SMALL_SIZE", "SMALL_BUFFER"]


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

    def covers(self, start, end):
        if not self.expandable:
            return self.base <= start and end <= self.base + self.size
        i = bisect.bisect_right(self.ranges, [start, float("inf")]) - 1
        return i >= 0 and self.ranges[i][0] <= start and end <= self.ranges[i][1]

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

    def region_of(self, start, end, segment):
        if segment is not None:
            r = self.segments.get(segment) or self.expandable.get(segment)
            return r if r is not None and r.covers(start, end) else None
        for r in list(self.segments.values()) + list(self.expandable.values()):
            if r.covers(start, end):
                return r
        return None

    def alloc(self, ptr, size, block_size, segment, ctx, stream, seq, t, frames):
        old = self.blocks.get(ptr)
        if old is not None:
            self.count["alloc of an address still in use (its free implied)"] += 1
            self.gone(ptr, old, t, IMPLIED % "free")
        region = self.region_of(ptr, ptr + block_size, segment)
        if region is None:
            self.count["alloc outside every segment (left out)"] += 1
            return
        b = Block()
        b.size, b.requested, b.pending, b.frames = block_size, size, False, frames
        b.ctx, b.stream, b.seq, b.region, b.free_entry = ctx, stream, seq, region, None
        region.blocks += 1
        if block_size > region.largest_block:
            region.largest_block = block_size
        self.blocks[ptr] = b
        self.add(("alloc", ptr, size, stream, t, frames, ""))

    def request_free(self, ptr, b, t, meta):
        b.pending = True
        b.free_entry = ["free_requested", ptr, b.requested, b.stream, t, b.frames, meta]
        self.add(b.free_entry)

    def gone(self, ptr, b, t, meta, at_request=True):
        """The block stops existing (freed, completed) at t, or for a freed block whose
        free_completed the log lacks right after its free_requested: entries for what the log
        lacks."""
        if not b.pending:
            self.request_free(ptr, b, t, meta)
            self.add(("free_completed", ptr, b.requested, b.stream, t, b.frames, meta))
        elif not at_request:
            self.add(("free_completed", ptr, b.requested, b.stream, t, b.frames, meta))
        elif b.free_entry is not None:
            b.free_entry.append(meta)     # completed right after its free_requested
        del self.blocks[ptr]
        b.region.blocks -= 1

    def free(self, action, ptr, t):
        b = self.blocks.get(ptr)
        if b is None:
            self.count["%s of a block not allocated (left out)" % action] += 1
            return
        if action == "free_requested":
            if b.pending:
                self.count["free_requested of a block already freed (left out)"] += 1
                return
            self.free_requested += 1
            self.request_free(ptr, b, t, "")
            return
        self.free_completed += 1
        if not b.pending:
            self.count["free_completed without free_requested (implied)"] += 1
            self.request_free(ptr, b, t, IMPLIED % "free_requested")
        del self.blocks[ptr]
        b.region.blocks -= 1
        self.add(("free_completed", ptr, b.requested, b.stream, t, b.frames, ""))

    def segment(self, action, ptr, size, segment, ctx, stream, t, meta=""):
        if action == "segment_alloc":
            if ptr in self.segments:
                self.count["segment_alloc of a segment that exists (its free implied)"] += 1
                self.segment("segment_free", ptr, 0, None, ctx, stream, t, IMPLIED % "free")
            self.segments[ptr] = Region(ptr, size, stream, ctx, False)
            self.regions_seen += 1
        elif action == "segment_free":
            r = self.segments.pop(ptr, None)
            if r is None:
                self.count["segment_free of an unknown segment (left out)"] += 1
                return
            if r.blocks:
                self.count["segment_free of a segment with blocks (their frees implied)"] += 1
                for p, b in [(p, b) for p, b in self.blocks.items() if b.region is r]:
                    self.gone(p, b, t, IMPLIED % "free", at_request=False)
            size, stream = r.size, r.stream
        elif action == "segment_map":
            base = segment if segment is not None else ptr
            r = self.expandable.get(base)
            if r is None:
                r = self.expandable[base] = Region(base, size, stream, ctx, True)
            self.regions_seen += 1
            add_range(r.ranges, ptr, ptr + size)
            stream = r.stream
        else:   # segment_unmap
            r = self.expandable.get(segment) if segment is not None else next(
                (r for r in self.expandable.values() if r.covers(ptr, ptr + 1)), None)
            if r is None:
                self.count["segment_unmap of an unknown range (left out)"] += 1
                return
            remove_range(r.ranges, ptr, ptr + size)
            stream = r.stream
        self.add((action, ptr, size, stream, t, NO_FRAMES, meta))

    def drop_context(self, ctx, t):
        """context_dropped: the driver took every block and segment of context ctx."""
        self.count["context_dropped (its memory written as freed)"] += 1
        for ptr, b in [(p, b) for p, b in self.blocks.items() if b.ctx == ctx]:
            self.gone(ptr, b, t, DRIVER_TOOK, at_request=False)
        for base, r in [(k, r) for k, r in self.segments.items() if r.ctx == ctx]:
            del self.segments[base]
            self.add(("segment_free", base, r.size, r.stream, t, NO_FRAMES, DRIVER_TOOK))
        for base, r in [(k, r) for k, r in self.expandable.items() if r.ctx == ctx]:
            del self.expandable[base]
            for s, e in r.ranges:
                self.add(("segment_unmap", s, e - s, r.stream, t, NO_FRAMES, DRIVER_TOOK))


def build(stream, max_entries=0, name="the log"):
    """(snapshot, notes) of the log read from a binary stream: its final segments and blocks, and
    each device's trace (the last max_entries entries of each, 0: all). Raises LogError for what
    is not a log, ExportError for a log with allocations but no pool decisions."""
    reader = LogReader(stream)
    devices = {}
    left_out = collections.Counter()
    clock = None
    for _, seq, t_ns, _, dev, ctx, action, ptr, size, block_size, segment, obj in reader:
        if clock is None:
            clock = Clock(reader.header)
            clock.wall_ns(t_ns)
        if action not in MAPPED:
            left_out[action] += 1
            continue
        d = devices.get(dev)
        if d is None:
            d = devices[dev] = Device(dev, max_entries)
        stream_ = v.hex_value(obj.get("stream")) or 0
        if action == "alloc":
            bt = obj.get("backtrace")
            frames = list(bt) if type(bt) is list and all(type(x) is str for x in bt) and bt \
                else NO_FRAMES
            d.alloc(ptr, size, block_size, segment, ctx, stream_, seq, t_ns, frames)
        elif action == "free_requested" or action == "free_completed":
            d.free(action, ptr, t_ns)
        elif action == "oom":
            free = obj.get("device_free")
            d.add(("oom", free if v.fits(free, v.UINT) else 0, size, stream_, t_ns, NO_FRAMES, ""))
        elif action == "context_dropped":
            d.drop_context(ctx, t_ns)
        else:
            d.segment(action, ptr, size, segment, ctx, stream_, t_ns)
    if reader.header is None and reader.events == 0 and reader.summary is None:
        raise LogError(not_a_log(name, reader.lines, reader.problems))
    if clock is None:
        clock = Clock(reader.header)
    check_decisions(devices, name)
    finish(devices)
    return conclude(devices, reader.header, reader.summary, clock, max_entries, left_out,
                    reader.devices.notes(), reader.problems.malformed)


def check_decisions(devices, name):
    """ExportError for a log with allocations but no pool decisions."""
    if any(d.count["alloc outside every segment (left out)"] and not d.regions_seen
           for d in devices.values()):
        raise ExportError("%s has allocations but no pool decisions (no segment events): a "
                          "memory_viz snapshot needs the pool's segments" % name)


def conclude(devices, header, summary, clock, max_entries, left_out, device_notes, malformed):
    """(snapshot, notes) of the devices as the log leaves them (dev -> Device, in the order first
    seen), whoever followed the log (build(), or the engine: from_engine())."""
    notes = ["device %d: the log has no free_completed events: blocks leave the cache at "
             "free_requested" % d.dev for d in devices.values()
             if d.free_completed == 0 and d.free_requested > 0]
    snap = snapshot(devices, header, clock, Frames(summary))
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
    notes.extend(device_notes)     # devices left out (devices.py)
    if malformed:
        notes.append("%d malformed lines skipped (cudapool report lists them)" % malformed)
    return snap, notes


def finish(devices):
    """The end of the log: blocks of a log without free_completed events leave at their
    free_requested."""
    for d in devices.values():
        if d.free_completed == 0 and d.free_requested > 0:
            for ptr, b in [(p, b) for p, b in d.blocks.items() if b.pending]:
                d.gone(ptr, b, 0, IMPLIED % "free_completed")


def from_engine(part, max_entries, name="the log"):
    """(snapshot, notes) from the engine's "memviz" object of a log (cudapool-analyze --memory-viz
    N: memviz_trace.h, the port of Device above, which it follows exactly). Raises ExportError as
    build() does."""
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
                    {a: n for a, n in part["left_out"]}, part["device_notes"], part["malformed"])
