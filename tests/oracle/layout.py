# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/layout.py: the report's second pass: each device's segments and blocks rebuilt
from its events up to its reserved peak, and there the largest free block (docs/log-format.md,
"Who reads what", item 4: fragmentation).

Reads the log again through reader.LogReader (which takes the same lines as in the first pass),
applies the layout actions, and stops at the last device's peak line (or at the last of the further
lines a caller asks for: the HTML page's segment maps, segmap.py). Not here: finding the peaks
(accounting.py), printing (text.py), block states and allocation sites (segmap.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import bisect

from cudapool_analysis import vocabulary as v
from oracle.reader import LogReader


def add_range(ranges, start, end):
    """Adds [start, end) to a sorted list of disjoint [s, e] ranges, joining touching ones."""
    i = bisect.bisect_left(ranges, [start, start])
    if i > 0 and ranges[i - 1][1] >= start:
        i -= 1
    j = i
    while j < len(ranges) and ranges[j][0] <= end:
        start = min(start, ranges[j][0])
        end = max(end, ranges[j][1])
        j += 1
    ranges[i:j] = [[start, end]]


def remove_range(ranges, start, end):
    i = bisect.bisect_left(ranges, [start, start])
    if i > 0 and ranges[i - 1][1] > start:
        i -= 1
    j = i
    kept = []
    while j < len(ranges) and ranges[j][0] < end:
        s, e = ranges[j]
        if s < start:
            kept.append([s, start])
        if e > end:
            kept.append([end, e])
        j += 1
    ranges[i:j] = kept


class Layout:
    """One device's segments and blocks, rebuilt from its events."""

    def __init__(self, free_on_request):
        self.free_on_request = free_on_request  # the log has no free_completed events
        self.blocks = {}    # ptr -> block_size (alloc .. free_completed)
        self.segments = {}  # base -> size
        self.mapped = {}    # segment base (or None) -> ranges of mapped pages
        self.ctx_of = {}    # block, segment or mapped-range key -> its context, where not 0

    def apply(self, action, ctx, ptr, size, block_size, segment):
        if ctx:
            self.ctx_of[segment if action == "segment_map" else ptr] = ctx
        if action == "alloc":
            self.blocks[ptr] = block_size
        elif action == "free_completed" or (action == "free_requested" and self.free_on_request):
            self.blocks.pop(ptr, None)
        elif action == "segment_alloc":
            self.segments[ptr] = size
        elif action == "segment_free":
            self.segments.pop(ptr, None)
        elif action == "segment_map":
            add_range(self.mapped.setdefault(segment, []), ptr, ptr + size)
        elif action == "context_dropped":  # the driver took every segment of that context
            mine = lambda key: self.ctx_of.get(key, 0) == ctx
            for table in (self.blocks, self.segments, self.mapped):
                for key in [k for k in table if mine(k)]:
                    del table[key]
        elif action == "segment_unmap":
            ranges = self.mapped.get(segment)
            if ranges is None:  # no segment field, or another one: look everywhere
                for r in self.mapped.values():
                    remove_range(r, ptr, ptr + size)
            else:
                remove_range(ranges, ptr, ptr + size)

    def regions(self):
        """The regions, sorted: (start, end, segment base) of every segment, and of every run of
        mapped pages of an expandable segment."""
        regions = [(base, base + size, base) for base, size in self.segments.items() if size > 0]
        for seg, ranges in self.mapped.items():
            for s, e in ranges:
                regions.append((s, e, seg if seg is not None else s))
        regions.sort()
        return regions

    def largest_gap(self, covered=None):
        """(largest free block, its address, its segment, regions): the largest range inside a
        region (a segment, or a run of mapped pages of an expandable segment) not covered by a
        block; covered, a range (start, end) that counts as covered too (the reserved peak's own
        new bytes)."""
        regions = self.regions()
        blocks = sorted((p, p + bs) for p, bs in self.blocks.items())
        if covered is not None and covered[1] > covered[0]:
            bisect.insort_right(blocks, (covered[0], covered[1]), key=lambda b: b[0])
        starts = [b[0] for b in blocks]
        best, best_at, best_seg = 0, None, None
        for rs, re_, seg in regions:
            cursor = rs
            i = bisect.bisect_left(starts, rs)
            if i > 0 and blocks[i - 1][1] > rs:
                cursor = blocks[i - 1][1]
            while i < len(blocks) and blocks[i][0] < re_:
                s, e = blocks[i]
                if s > cursor and s - cursor > best:
                    best, best_at, best_seg = s - cursor, cursor, seg
                if e > cursor:
                    cursor = e
                i += 1
            if re_ > cursor and re_ - cursor > best:
                best, best_at, best_seg = re_ - cursor, cursor, seg
        return best, best_at, best_seg, len(regions)


def second_pass(stream, run, stops=None, observe=None):
    """The layout of every device with a reserved peak, at that peak: dev -> largest_gap() and
    the largest free block without the peak's own new bytes.
    stops: {line: [(dev, callback)]}, further lines (of that device's events) at which
    callback(layout) is handed the device's layout after that event, for devices with or without
    a reserved peak; the pass reads until the last line asked for. observe(dev, line, seq, t_ns,
    ctx, action, ptr, size, block_size, segment, obj), when given, sees every event read, before
    the stops of its line."""
    result = {}
    targets = {}   # line -> [(dev, callback)]
    last = {}      # dev -> the last line its layout is needed for
    for dev, d in run.devices.items():
        if d.peak_reserved is not None and d.peak_reserved[0] > 0:
            at = d.peak_reserved[3]
            _, _, _, _, _, _, _, ptr, size = d.peak_reserved

            def peak(layout, dev=dev, ptr=ptr, size=size):   # and as the request found it
                result[dev] = layout.largest_gap() + (layout.largest_gap((ptr, ptr + size))[0],)
            targets.setdefault(at, []).append((dev, peak))
            last[dev] = at
    for at, entries in (stops or {}).items():
        for dev, callback in entries:
            if dev in run.devices:
                targets.setdefault(at, []).append((dev, callback))
                last[dev] = max(last.get(dev, 0), at)
    if not targets:
        return result
    layouts = {dev: Layout(run.devices[dev].no_free_completed()) for dev in last}
    layout_actions = v.LAYOUT_ACTIONS
    for line, seq, t_ns, _, dev, ctx, action, ptr, size, block_size, segment, obj in \
            LogReader(stream):
        if observe is not None:
            observe(dev, line, seq, t_ns, ctx, action, ptr, size, block_size, segment, obj)
        layout = layouts.get(dev)
        if layout is None:
            continue
        if action == "alloc" and not ctx:          # the most frequent two, without a call
            layout.blocks[ptr] = block_size
        elif action == "free_completed" and not ctx:
            layout.blocks.pop(ptr, None)
        elif action in layout_actions:
            layout.apply(action, ctx, ptr, size, block_size, segment)
        if line in targets:
            for _, callback in targets[line]:
                callback(layout)
            if line == last[dev]:
                del layouts[dev]
                if not layouts:
                    break
    return result
