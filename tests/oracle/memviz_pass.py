# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/memviz_pass.py: the memory_viz export's pass in Python, as `cudapool export
--memory-viz` made it before the analysis engine did (cudapool-analyze --memory-viz N,
tools/analyze/memviz_trace.h, its port): the log read event by event into each device's pool as
its events leave it and the trace of its actions (Device, a cudapool_analysis.memviz.Device that
follows the events), then the same snapshot and notes (memviz.conclude): tests/cli/memviz_agree.sh
checks the engine against it, the same snapshot and notes.

    snap, notes = build(stream, max_entries, name)   # as memviz.from_engine(part, ...) gives them

The trace is kept consistent for the viewer, which replays it backwards from the final state: what
the log leaves out (a free_completed missing, memory the driver took with its context) is written
as entries marked in `user_metadata`, and events that fit nothing (a free of an unknown block) are
left out and counted in the notes.

Not here: the snapshot's shape and the notes (cudapool_analysis/memviz.py, memviz_snapshot.py),
the pool's decisions of a request-only log (replayed first: pool_log.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import bisect
import collections

from cudapool_analysis import memviz
from cudapool_analysis import vocabulary as v
from cudapool_analysis.clock import Clock
from cudapool_analysis.frames import UNKNOWN_FILE
from cudapool_analysis.memviz import NO_FRAMES, Block, Region, check_decisions, conclude
from oracle.reader import LogReader, LogError, not_a_log

from .layout import add_range, remove_range
from .symbols import Addr2Line
from .pystacks import RESOLVED


DRIVER_TOOK = "context_dropped: the driver took this memory with its context"
IMPLIED = "implied: the log has no %s for this block"
MAPPED = v.actions("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                   "segment_map", "segment_unmap", "oom", "context_dropped")


def covers(region, start, end):
    """Whether [start, end) lies in the region (a segment, or a mapped range of an expandable
    one)."""
    if not region.expandable:
        return region.base <= start and end <= region.base + region.size
    i = bisect.bisect_right(region.ranges, [start, float("inf")]) - 1
    return i >= 0 and region.ranges[i][0] <= start and end <= region.ranges[i][1]


class Device(memviz.Device):
    """One device's pool, and the trace of its actions, followed event by event."""

    def region_of(self, start, end, segment):
        if segment is not None:
            r = self.segments.get(segment) or self.expandable.get(segment)
            return r if r is not None and covers(r, start, end) else None
        for r in list(self.segments.values()) + list(self.expandable.values()):
            if covers(r, start, end):
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
                (r for r in self.expandable.values() if covers(r, ptr, ptr + 1)), None)
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
                else []
            # Then its Python stack's frames, innermost first, in the snapshot's form.
            frames += [{"filename": f[0], "line": f[1], "name": f[2]} if f is not None
                       else {"filename": UNKNOWN_FILE, "line": 0, "name": UNKNOWN_FILE}
                       for f in obj.get(RESOLVED) or ()]
            frames = frames or NO_FRAMES
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
                    reader.devices.notes(), reader.problems.malformed, Addr2Line())


def finish(devices):
    """The end of the log: blocks of a log without free_completed events leave at their
    free_requested."""
    for d in devices.values():
        if d.free_completed == 0 and d.free_requested > 0:
            for ptr, b in [(p, b) for p, b in d.blocks.items() if b.pending]:
                d.gone(ptr, b, 0, IMPLIED % "free_completed")
