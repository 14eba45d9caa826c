# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/accounting.py: the report's first pass over a log: what its events imply per
device (docs/log-format.md, "What the events imply"): torch.cuda.memory_stats()-style counters
(pool "all"), the allocated and reserved peaks with their lines, the blocks still allocated, the
changes of the bytes held over time (held_pass.py), the request sizes, the oom events, seq gaps,
and the problems of the events' sequence (a free of a block not allocated, ...).

Reads the events through reader.LogReader, one pass, memory growing with what is live at a time.
Not here: parsing (reader.py), the segments' layout (layout.py), the report's shape (report.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import heapq

from cudapool_analysis import vocabulary as v
from oracle.reader import LogReader, Malformed
from cudapool_analysis.text import TOP

from .held_pass import Changes
from .oom import oom_figures

# The actions the loop below acts on (the others are counted).
HANDLED = v.actions("alloc", "free_requested", "free_completed", "segment_alloc", "segment_map",
                    "segment_free", "segment_unmap", "context_dropped", "oom")
IMPLIED = tuple((name, v.stat("%s.all.%s" % (name, field))) for name in (
    "allocation", "allocated_bytes", "active", "active_bytes", "requested_bytes",
    "reserved_bytes", "segment") for field in v.STAT_FIELDS)
COUNTERS = (v.stat("num_ooms"), v.stat("num_device_alloc"), v.stat("num_device_free"))


class Device:
    """One device as its events describe it."""

    def __init__(self, dev):
        self.dev = dev
        self.events = 0
        # Allocated blocks (alloc .. free_requested): ptr -> (size, block_size, seq, t_ns, tid,
        # backtrace); active blocks (alloc .. free_completed): ptr -> (block_size, size).
        self.live = {}
        self.active = {}
        # torch.cuda.memory_stats()-style counters, pool "all": [current, peak, allocated, freed]
        self.allocation = [0, 0, 0, 0]
        self.allocated_bytes = [0, 0, 0, 0]
        self.active_n = [0, 0, 0, 0]
        self.active_bytes = [0, 0, 0, 0]
        self.requested_bytes = [0, 0, 0, 0]
        self.requested_until_free = [0, 0, 0, 0]  # requested bytes, ended by free_requested
        self.reserved_bytes = [0, 0, 0, 0]
        self.segment = [0, 0, 0, 0]
        self.num_ooms = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self.free_requested = 0
        self.free_completed = 0
        self.peak_allocated = None  # (bytes, seq, t_ns, line)
        # (bytes, seq, t_ns, line, allocated then, active then, the event that set it: its
        # action, ptr and size)
        self.peak_reserved = None
        self.peak_request = None    # the first alloc after the reserved peak: (size, block_size, seq)
        self.peak_request_pending = False
        # context_dropped: the pool went with its context (the driver took its memory)
        self.contexts_dropped = 0
        self.dropped_blocks = 0        # blocks still allocated when it went
        self.dropped_bytes = 0
        self.last_drop_seq = None
        # Several contexts on the device (events with "ctx" > 0): the context of each block
        # allocated in one of them (ptr -> ctx; absent: 0), and each context's reserved bytes and
        # segments, so that a context_dropped takes only that context's share.
        self.ctx_of = {}
        self.contexts = {0}
        self.reserved_ctx = {}
        self.segments_ctx = {}

    def note_segment(self, ctx, bytes_, segments):
        self.reserved_ctx[ctx] = self.reserved_ctx.get(ctx, 0) + bytes_
        self.segments_ctx[ctx] = self.segments_ctx.get(ctx, 0) + segments

    def drop_context(self, seq, ctx=0):
        """Context ctx's pool on the device was dropped with its context: its blocks and segments
        are gone, not leaked; what follows of that context number belongs to a new pool. Peaks and
        totals cover the whole run."""
        self.contexts_dropped += 1
        self.last_drop_seq = seq
        ctx_of = self.ctx_of
        gone = [p for p in self.live if ctx_of.get(p, 0) == ctx]
        for p in gone:
            size, block_size = self.live.pop(p)[:2]
            self.dropped_blocks += 1
            self.dropped_bytes += block_size
            self.allocation[0] -= 1
            self.allocated_bytes[0] -= block_size
            self.requested_until_free[0] -= size
        for p in [p for p in self.active if ctx_of.get(p, 0) == ctx]:
            block_size, size = self.active.pop(p)
            self.active_n[0] -= 1
            self.active_bytes[0] -= block_size
            self.requested_bytes[0] -= size
        self.reserved_bytes[0] -= self.reserved_ctx.pop(ctx, 0)
        self.segment[0] -= self.segments_ctx.pop(ctx, 0)

    def no_free_completed(self):
        """The log frees blocks but has no free_completed events (a log of another writer):
        blocks then leave the cache, and stop being active, at free_requested."""
        return self.free_completed == 0 and self.free_requested > 0

    def implied_stats(self):
        if self.no_free_completed():
            active, active_bytes, requested = (self.allocation, self.allocated_bytes,
                                               self.requested_until_free)
        else:
            active, active_bytes, requested = self.active_n, self.active_bytes, self.requested_bytes
        values = {"allocation": self.allocation, "allocated_bytes": self.allocated_bytes,
                  "active": active, "active_bytes": active_bytes, "requested_bytes": requested,
                  "reserved_bytes": self.reserved_bytes, "segment": self.segment}
        s = {}
        for i, (array, name) in enumerate(IMPLIED):
            s[name] = values[array][i % 4]
        for name in COUNTERS:
            s[name] = getattr(self, name)
        return s


def up(stat, n):
    stat[0] += n
    stat[2] += n
    if stat[0] > stat[1]:
        stat[1] = stat[0]


def down(stat, n):
    stat[0] -= n
    stat[3] += n


class Run:
    """Everything the first pass learns about one log."""

    def __init__(self, reader):
        self.reader = reader      # its header, summary, line counts, notes, problems
        self.problems = reader.problems
        self.actions = {}
        self.devices = {}
        self.first_t = None
        self.last_seq = None
        self.seq_gaps = 0
        self.first_gap = None
        self.cache_hits = 0
        self.size_counts = {}
        self.largest = []         # heap of (size, -line, dev, seq, t_ns)
        self.ooms = []            # the first TOP: (dev, size, seq, t_ns, figures or None)
        self.held = Changes()     # every change of the bytes held, with its time (held_pass.py)

    def seconds(self, t_ns):
        """t_ns as seconds since the log's first event (the report's time_s), or None."""
        if type(t_ns) is not int or self.first_t is None:
            return None
        return (t_ns - self.first_t) / 1e9

    def device(self, dev):
        d = self.devices.get(dev)
        if d is None:
            d = self.devices[dev] = Device(dev)
        return d


class _NoSizes(dict):
    """A size table that keeps nothing: first_pass(request_sizes=False)."""

    def __setitem__(self, key, value):
        pass


def first_pass(stream, observe=None, request_sizes=True):
    """Reads every line of a binary stream once: counts, statistics, peaks, request sizes, live
    blocks. Returns a Run. observe(d, line, seq, t_ns, ctx, action, ptr, size, block_size,
    segment, obj), when given, is called after each event has been counted, with its Device d
    (whose counters then hold the state after the event): how the HTML page (htmlreport.py)
    follows the figures over time without counting them again. request_sizes=False keeps no
    table of request sizes (it grows with the distinct sizes; the Perfetto export needs none)."""
    reader = LogReader(stream)
    run = Run(reader)
    problem = run.problems.add
    dev_id = None
    d = None
    sizes = run.size_counts if request_sizes else _NoSizes()
    largest = run.largest
    actions = run.actions
    cache_hits = 0
    first_t = last_t = None
    last_seq = None
    skipped_seen = 0
    held_after = run.held.after
    for line, seq, t_ns, tid, dev, ctx, action, ptr, size, block_size, segment, obj in reader:
        if dev != dev_id:
            d = run.device(dev)
            dev_id = dev
        d.events += 1
        if first_t is None:
            first_t = t_ns
        last_t = t_ns
        if last_seq is not None and seq != last_seq + 1:
            # Not a gap where the reader skipped events of devices it does not take (they lie
            # between these two: every skipped event is in the gap after it).
            skipped = reader.devices.skipped_events() - skipped_seen
            skipped_seen += skipped
            if seq != last_seq + 1 + skipped:
                run.seq_gaps += 1
                if run.first_gap is None:
                    run.first_gap = (line, last_seq, seq)
        last_seq = seq
        actions[action] = actions.get(action, 0) + 1

        if action == "alloc":
            if d.peak_request_pending:
                d.peak_request_pending = False
                d.peak_request = (size, block_size, seq)
            live = d.live
            if ptr in live:
                old = live.pop(ptr)
                problem(line, "alloc of 0x%x, which is still allocated (since seq %d): "
                        "counted as freed" % (ptr, old[2]))
                down(d.allocation, 1)
                down(d.allocated_bytes, old[1])
                down(d.requested_until_free, old[0])
            active = d.active
            if ptr in active:  # its free_completed is missing: the block left the cache
                old = active.pop(ptr)
                down(d.active_n, 1)
                down(d.active_bytes, old[0])
                down(d.requested_bytes, old[1])
            live[ptr] = (size, block_size, seq, t_ns, tid, obj.get("backtrace"))
            active[ptr] = (block_size, size)
            if ctx:
                d.ctx_of[ptr] = ctx
                d.contexts.add(ctx)
            elif d.ctx_of:
                d.ctx_of.pop(ptr, None)
            # up() of five counters, written out: the loop's most frequent lines
            st = d.allocation
            st[0] += 1
            st[2] += 1
            if st[0] > st[1]:
                st[1] = st[0]
            st = d.active_n
            st[0] += 1
            st[2] += 1
            if st[0] > st[1]:
                st[1] = st[0]
            st = d.active_bytes
            st[0] += block_size
            st[2] += block_size
            if st[0] > st[1]:
                st[1] = st[0]
            st = d.requested_bytes
            st[0] += size
            st[2] += size
            if st[0] > st[1]:
                st[1] = st[0]
            st = d.requested_until_free
            st[0] += size
            st[2] += size
            if st[0] > st[1]:
                st[1] = st[0]
            ab = d.allocated_bytes
            ab[0] += block_size
            ab[2] += block_size
            if ab[0] > ab[1]:
                ab[1] = ab[0]
                d.peak_allocated = (ab[0], seq, t_ns, line)
            if obj.get("cache_hit") is True:
                cache_hits += 1
            sizes[size] = sizes.get(size, 0) + 1
            if len(largest) < TOP:
                heapq.heappush(largest, (size, -line, dev, seq, t_ns))
            elif size > largest[0][0]:
                heapq.heapreplace(largest, (size, -line, dev, seq, t_ns))
        elif action == "free_requested":
            d.free_requested += 1
            old = d.live.pop(ptr, None)
            if old is None:
                problem(line, "free of 0x%x, which is not allocated" % ptr)
            else:   # down() of three counters, written out
                st = d.allocation
                st[0] -= 1
                st[3] += 1
                st = d.allocated_bytes
                st[0] -= old[1]
                st[3] += old[1]
                st = d.requested_until_free
                st[0] -= old[0]
                st[3] += old[0]
        elif action == "free_completed":
            d.free_completed += 1
            old = d.active.pop(ptr, None)
            if old is None:
                problem(line, "free_completed of 0x%x, which is not active" % ptr)
            else:   # down() of three counters, written out
                st = d.active_n
                st[0] -= 1
                st[3] += 1
                st = d.active_bytes
                st[0] -= old[0]
                st[3] += old[0]
                st = d.requested_bytes
                st[0] -= old[1]
                st[3] += old[1]
        elif action == "segment_alloc" or action == "segment_map":
            if action == "segment_alloc":
                up(d.segment, 1)
            d.note_segment(ctx, size, action == "segment_alloc")
            d.num_device_alloc += 1
            rb = d.reserved_bytes
            rb[0] += size
            rb[2] += size
            if rb[0] > rb[1]:
                rb[1] = rb[0]
                d.peak_reserved = (rb[0], seq, t_ns, line, d.allocated_bytes[0],
                                   d.active_bytes[0], action, ptr, size)
                d.peak_request, d.peak_request_pending = None, True
        elif action == "segment_free" or action == "segment_unmap":
            if action == "segment_free":
                down(d.segment, 1)
            d.note_segment(ctx, -size, -(action == "segment_free"))
            d.num_device_free += 1
            down(d.reserved_bytes, size)
        elif action == "context_dropped":
            d.drop_context(seq, ctx)
        elif action == "oom":
            d.num_ooms += 1
            if len(run.ooms) < TOP:
                try:
                    figures = oom_figures(obj, size)
                except Malformed as e:
                    problem(line, "oom event: %s: its explanation is left out" % e)
                    figures = None
                run.ooms.append((dev, size, seq, t_ns, figures))
        held_after(d, t_ns, seq)
        if observe is not None:
            observe(d, line, seq, t_ns, ctx, action, ptr, size, block_size, segment, obj)
    run.cache_hits = cache_hits
    run.first_t = first_t
    run.last_t = last_t
    run.last_seq = last_seq
    return run
