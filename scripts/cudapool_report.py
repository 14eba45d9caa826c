#!/usr/bin/env python3
"""scripts/cudapool_report.py: reads a cudapool allocation log (cudapool.log/1, docs/log-format.md)
and prints what happened: the header, the memory statistics in torch.cuda.memory_summary()'s layout,
the allocated and reserved peaks with their times, the fragmentation at the reserved peak, the most
frequent and the largest requests, and the leaks.

usage: cudapool_report.py [--json] LOG      (LOG: a file, or - for stdin)

Streams the log: one pass over the lines for everything, and a second pass that stops at the
reserved peak to rebuild the segments' layout for the fragmentation (stdin is spooled to a temporary
file for it). Memory grows with what is live at a time (blocks, segments), not with the log.
A line that is not a valid event is counted with its line number and skipped; a log without a
summary line (a killed process) is reported as such, with the statistics its events imply.
Exit status: 0 when the log could be read, 1 when it could not, 2 on a usage error.
Python standard library only.
"""

import argparse
import bisect
import heapq
import json
import shlex
import sys
import tempfile

REPORT_SCHEMA = "cudapool.report/1"
LOG_SCHEMA = "cudapool.log/1"
MAX_PROBLEMS = 100   # problems listed with their line numbers (all are counted)
TOP = 10             # rows of the request-size tables
TEXT_LEAKS = 100     # leaks listed in the text report (--json lists all)
TABLE_WIDTH = 75

# Events that change the layout of a device's memory (the second pass reads only these).
LAYOUT_ACTIONS = frozenset(("alloc", "free_requested", "free_completed", "segment_alloc",
                            "segment_free", "segment_map", "segment_unmap", "context_dropped"))
KNOWN_ACTIONS = LAYOUT_ACTIONS | frozenset((
    "oom", "empty_cache", "alloc_async", "free_async", "alloc_managed", "alloc_pitch",
    "vmm_create", "vmm_release", "vmm_map", "vmm_unmap", "alloc_host", "free_host",
    "free_unowned", "bad_free", "ipc_refused", "context_dropped", "stream_created",
    "stream_first_work", "segment_refused"))


class Malformed(Exception):
    """A line that is not a valid event; the message says why."""


def decode_event(obj):
    """The required fields of an event object: (seq, t_ns, tid, dev, ptr, size).
    Raises Malformed when one is missing or of the wrong type."""
    try:
        seq = obj["seq"]
        t_ns = obj["t_ns"]
        tid = obj["tid"]
        dev = obj["dev"]
        ptr = obj["ptr"]
        size = obj["size"]
    except KeyError as e:
        raise Malformed("event without %s" % e) from None
    if (type(seq) is not int or type(t_ns) is not int or type(tid) is not int
            or type(dev) is not int or type(size) is not int):
        for name in ("seq", "t_ns", "tid", "dev", "size"):
            if type(obj[name]) is not int:
                raise Malformed("%s is not an integer" % name)
    if size < 0:
        raise Malformed("size is negative")
    if type(ptr) is not str or ptr[:2] not in ("0x", "0X"):
        raise Malformed("ptr is not a hex string")
    try:
        p = int(ptr, 16)
    except ValueError:
        raise Malformed("ptr is not a hex string") from None
    return seq, t_ns, tid, dev, p, size


def optional_int(obj, name, default):
    v = obj.get(name, default)
    if type(v) is not int:
        raise Malformed("%s is not an integer" % name)
    return v


def optional_hex(obj, name):
    v = obj.get(name)
    if v is None:
        return None
    if type(v) is not str or v[:2] not in ("0x", "0X"):
        raise Malformed("%s is not a hex string" % name)
    try:
        return int(v, 16)
    except ValueError:
        raise Malformed("%s is not a hex string" % name) from None


def check_layout_fields(obj, size):
    """The optional fields the layout uses, checked alike in both passes; returns block_size."""
    block_size = optional_int(obj, "block_size", size)
    optional_hex(obj, "segment")
    return block_size


def parse_line(raw):
    """A line as a JSON object, or raises Malformed. Returns None for a blank line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("not valid UTF-8 (byte %d)" % e.start) from None
    try:
        obj = json.loads(text)
    except ValueError as e:
        if not text.strip():
            return None
        raise Malformed("not JSON (%s)" % e) from None
    except RecursionError:
        raise Malformed("not JSON (nested too deeply)") from None
    if type(obj) is not dict:
        raise Malformed("not a JSON object")
    return obj


class Device:
    """One device as its events describe it (first pass)."""

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
        self.peak_reserved = None   # (bytes, seq, t_ns, line, allocated then)
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
        s = {}
        if self.no_free_completed():
            active, active_bytes, requested = (self.allocation, self.allocated_bytes,
                                               self.requested_until_free)
        else:
            active, active_bytes, requested = self.active_n, self.active_bytes, self.requested_bytes
        for key, v in (("allocation", self.allocation), ("allocated_bytes", self.allocated_bytes),
                       ("active", active), ("active_bytes", active_bytes),
                       ("requested_bytes", requested),
                       ("reserved_bytes", self.reserved_bytes), ("segment", self.segment)):
            for i, name in enumerate(("current", "peak", "allocated", "freed")):
                s["%s.all.%s" % (key, name)] = v[i]
        s["num_ooms"] = self.num_ooms
        s["num_device_alloc"] = self.num_device_alloc
        s["num_device_free"] = self.num_device_free
        return s


def up(stat, n):
    stat[0] += n
    stat[2] += n
    if stat[0] > stat[1]:
        stat[1] = stat[0]


def down(stat, n):
    stat[0] -= n
    stat[3] += n


class Log:
    """Everything the first pass learns."""

    def __init__(self):
        self.lines = 0
        self.blank_lines = 0
        self.header = None
        self.summary = None
        self.summary_line = None
        self.events = 0
        self.events_after_summary = 0
        self.malformed = 0
        self.problems = []        # (line, what), the first MAX_PROBLEMS
        self.problem_count = 0
        self.notes = []
        self.actions = {}
        self.devices = {}
        self.first_t = None
        self.last_seq = None
        self.seq_gaps = 0
        self.first_gap = None
        self.cache_hits = 0
        self.size_counts = {}
        self.largest = []         # heap of (size, -line, dev, seq, t_ns)
        self.ooms = []            # the first TOP: (dev, size, seq, t_ns)

    def problem(self, line, what, malformed=False):
        if malformed:
            self.malformed += 1
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append((line, what))

    def device(self, dev):
        d = self.devices.get(dev)
        if d is None:
            d = self.devices[dev] = Device(dev)
        return d


def slow_parse(raw, lineno, log):
    """A line the fast path of first_pass() did not take, checked field by field: returns the
    event's (obj, action, seq, t_ns, tid, dev, ptr, size, block_size), or None when the line was
    a header, a summary, blank or malformed (then it is recorded in log)."""
    try:
        obj = parse_line(raw)
        if obj is None:
            log.blank_lines += 1
            return None
        action = obj.get("action")
        if action is None:
            if "schema" in obj:
                header_line(log, obj, lineno)
            else:
                log.problem(lineno, "malformed: a JSON object without action", True)
            return None
        if type(action) is not str:
            raise Malformed("action is not a string")
        if action == "summary":
            summary_line(log, obj, lineno)
            return None
        seq, t_ns, tid, dev, ptr, size = decode_event(obj)
        block_size = check_layout_fields(obj, size) if action in LAYOUT_ACTIONS else size
    except Malformed as e:
        log.problem(lineno, "malformed: %s" % e, True)
        return None
    return obj, action, seq, t_ns, tid, dev, ptr, size, block_size


OOM_FIELDS = ("block_size", "segment_size", "device_total", "device_free", "cap", "reserved",
              "allocated", "free_blocks", "largest_free_block")


def oom_figures(obj):
    """The figures an oom event of the shim carries (docs/log-format.md), or None."""
    cause = obj.get("cause")
    if cause not in ("fragmentation", "cap", "shortage"):
        return None
    f = {"cause": cause, "requested": obj.get("size", 0)}
    for k in OOM_FIELDS:
        v = obj.get(k, 0)
        f[k] = v if type(v) is int and v >= 0 else 0
    f["device_free_known"] = "device_free" in obj
    return f


def mib_text(b):
    if b >= 1 << 30:
        return "%.2f GiB" % (b / (1 << 30))
    if b >= 1 << 20:
        return "%.2f MiB" % (b / (1 << 20))
    return "%d bytes" % b


def explain_oom(f, dev):
    """The explanation of an oom event, as the shim printed it (pool/oom.cpp); [] without figures."""
    if not f:
        return []
    unallocated = max(0, f["reserved"] - f["allocated"])
    out = ["out of memory on device %d: tried to allocate %s (a block of %s, from a new segment of %s)"
           % (dev, mib_text(f["requested"]), mib_text(f["block_size"]), mib_text(f["segment_size"])),
           "  device: %s total, %s free%s" % (
               mib_text(f["device_total"]),
               mib_text(f["device_free"]) if f["device_free_known"] else "(unknown)",
               ", cap %s (per_process_memory_fraction)" % mib_text(f["cap"]) if f["cap"] else ""),
           "  pool: %s reserved, %s allocated, %s reserved but unallocated in %d free cached block%s "
           "(the largest %s)" % (mib_text(f["reserved"]), mib_text(f["allocated"]),
                                 mib_text(unallocated), f["free_blocks"],
                                 "" if f["free_blocks"] == 1 else "s",
                                 mib_text(f["largest_free_block"]))]
    if f["cause"] == "cap":
        need = (f["reserved"] + f["segment_size"]) / f["device_total"] if f["device_total"] else 1.0
        out.append("  why: the memory cap refused it, the device had room. Raise "
                   "per_process_memory_fraction to at least %.2f, or unset it"
                   % (1.0 if need > 1.0 else need + 0.005))
    elif f["cause"] == "fragmentation":
        out.append("  why: fragmentation: %s is reserved but unallocated, yet no free block holds %s. "
                   "Try expandable_segments:True, or see what `cudapool tune` finds for this log"
                   % (mib_text(unallocated), mib_text(f["block_size"])))
    else:
        out.append("  why: the program holds %s of the device's %s; no setting of the pool frees "
                   "that: use less memory (smaller batches) or a larger device"
                   % (mib_text(f["allocated"]), mib_text(f["device_total"])))
    return out


def first_pass(stream, spool):
    """Reads every line once: counts, statistics, peaks, request sizes, live blocks."""
    log = Log()
    lineno = 0
    dev_id = None
    d = None
    sizes = log.size_counts
    largest = log.largest
    actions = log.actions
    scan = json.decoder.JSONDecoder().scan_once
    layout_actions = LAYOUT_ACTIONS
    events = 0
    cache_hits = 0
    first_t = None
    last_seq = None
    for raw in stream:
        lineno += 1
        if spool is not None:
            spool.write(raw)
        # The fast path: a well-formed event as the shim writes it. Anything else (a header, a
        # summary, a malformed line, unusual whitespace) goes to slow_parse(), which decides.
        try:
            text = raw.decode()
            obj, end = scan(text, 0)
            if end != len(text) and text[end:] not in ("\n", "\r\n"):
                raise ValueError
            action = obj["action"]
            seq = obj["seq"]
            t_ns = obj["t_ns"]
            tid = obj["tid"]
            dev = obj["dev"]
            size = obj["size"]
            ptr = obj["ptr"]
            if (type(seq) is not int or type(t_ns) is not int or type(tid) is not int
                    or type(dev) is not int or type(size) is not int or size < 0
                    or type(action) is not str or action == "summary"
                    or not ptr.startswith("0x")):
                raise ValueError
            ptr = int(ptr, 16)
            if action in layout_actions:
                block_size = obj.get("block_size", size)
                segment = obj.get("segment")
                if type(block_size) is not int:
                    raise ValueError
                if segment is not None and not (segment.startswith("0x") and int(segment, 16) >= 0):
                    raise ValueError
            else:
                block_size = size
        except Exception:
            parsed = slow_parse(raw, lineno, log)
            if parsed is None:
                continue
            obj, action, seq, t_ns, tid, dev, ptr, size, block_size = parsed

        # A valid event.
        events += 1
        if dev != dev_id:
            d = log.device(dev)
            dev_id = dev
        d.events += 1
        if first_t is None:
            first_t = t_ns
        if last_seq is not None and seq != last_seq + 1:
            log.seq_gaps += 1
            if log.first_gap is None:
                log.first_gap = (lineno, last_seq, seq)
        last_seq = seq
        if log.summary is not None:
            log.events_after_summary += 1
        actions[action] = actions.get(action, 0) + 1

        if action == "alloc":
            live = d.live
            if ptr in live:
                old = live.pop(ptr)
                log.problem(lineno, "alloc of 0x%x, which is still allocated (since seq %d): "
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
            ctx = obj.get("ctx", 0)
            if ctx:
                d.ctx_of[ptr] = ctx
                d.contexts.add(ctx)
            elif d.ctx_of:
                d.ctx_of.pop(ptr, None)
            up(d.allocation, 1)
            up(d.active_n, 1)
            up(d.active_bytes, block_size)
            up(d.requested_bytes, size)
            up(d.requested_until_free, size)
            ab = d.allocated_bytes
            ab[0] += block_size
            ab[2] += block_size
            if ab[0] > ab[1]:
                ab[1] = ab[0]
                d.peak_allocated = (ab[0], seq, t_ns, lineno)
            if obj.get("cache_hit") is True:
                cache_hits += 1
            sizes[size] = sizes.get(size, 0) + 1
            if len(largest) < TOP:
                heapq.heappush(largest, (size, -lineno, dev, seq, t_ns))
            elif size > largest[0][0]:
                heapq.heapreplace(largest, (size, -lineno, dev, seq, t_ns))
        elif action == "free_requested":
            d.free_requested += 1
            old = d.live.pop(ptr, None)
            if old is None:
                log.problem(lineno, "free of 0x%x, which is not allocated" % ptr)
            else:
                down(d.allocation, 1)
                down(d.allocated_bytes, old[1])
                down(d.requested_until_free, old[0])
        elif action == "free_completed":
            d.free_completed += 1
            old = d.active.pop(ptr, None)
            if old is None:
                log.problem(lineno, "free_completed of 0x%x, which is not active" % ptr)
            else:
                down(d.active_n, 1)
                down(d.active_bytes, old[0])
                down(d.requested_bytes, old[1])
        elif action == "segment_alloc" or action == "segment_map":
            if action == "segment_alloc":
                up(d.segment, 1)
            d.note_segment(obj.get("ctx", 0), size, action == "segment_alloc")
            d.num_device_alloc += 1
            rb = d.reserved_bytes
            rb[0] += size
            rb[2] += size
            if rb[0] > rb[1]:
                rb[1] = rb[0]
                d.peak_reserved = (rb[0], seq, t_ns, lineno, d.allocated_bytes[0])
        elif action == "segment_free" or action == "segment_unmap":
            if action == "segment_free":
                down(d.segment, 1)
            d.note_segment(obj.get("ctx", 0), -size, -(action == "segment_free"))
            d.num_device_free += 1
            down(d.reserved_bytes, size)
        elif action == "context_dropped":
            d.drop_context(seq, obj.get("ctx", 0))
        elif action == "oom":
            d.num_ooms += 1
            if len(log.ooms) < TOP:
                log.ooms.append((dev, size, seq, t_ns, oom_figures(obj)))
    log.lines = lineno
    log.events = events
    log.cache_hits = cache_hits
    log.first_t = first_t
    log.last_seq = last_seq
    return log


def header_line(log, obj, lineno):
    schema = obj.get("schema")
    if type(schema) is not str or not schema.startswith("cudapool.log/"):
        log.problem(lineno, "malformed: schema %r is not cudapool.log/N" % (schema,), True)
        return
    if log.header is not None:
        log.problem(lineno, "a second header line: ignored")
        return
    if log.devices or log.summary is not None:
        log.problem(lineno, "a header line after events: ignored")
        return
    if lineno != 1:
        log.notes.append("the header is on line %d, not the first line" % lineno)
    if schema != LOG_SCHEMA:
        log.notes.append("schema %s: this report reads %s (fields it does not know are ignored)"
                         % (schema, LOG_SCHEMA))
    log.header = obj


def summary_line(log, obj, lineno):
    if log.summary is not None:
        log.problem(lineno, "a second summary line: ignored")
        return
    devices = obj.get("devices")
    if devices is not None and not isinstance(devices, dict):
        log.problem(lineno, "malformed: summary devices is not an object", True)
        return
    log.summary = obj
    log.summary_line = lineno


# ---- the second pass: the layout at the reserved peak ----------------------------------------

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
    """One device's segments and blocks, rebuilt from its events (second pass)."""

    def __init__(self, free_on_request):
        self.free_on_request = free_on_request  # the log has no free_completed events
        self.blocks = {}    # ptr -> block_size (alloc .. free_completed)
        self.segments = {}  # base -> size
        self.mapped = {}    # segment base (or None) -> ranges of mapped pages
        self.ctx_of = {}    # block, segment or mapped-range key -> its context, where not 0

    def apply(self, action, obj, ptr, size, block_size):
        ctx = obj.get("ctx", 0)
        if ctx:
            key = optional_hex(obj, "segment") if action == "segment_map" else ptr
            self.ctx_of[key] = ctx
        if action == "alloc":
            self.blocks[ptr] = block_size
        elif action == "free_completed" or (action == "free_requested" and self.free_on_request):
            self.blocks.pop(ptr, None)
        elif action == "segment_alloc":
            self.segments[ptr] = size
        elif action == "segment_free":
            self.segments.pop(ptr, None)
        elif action == "segment_map":
            add_range(self.mapped.setdefault(optional_hex(obj, "segment"), []), ptr, ptr + size)
        elif action == "context_dropped":  # the driver took every segment of that context
            mine = lambda key: self.ctx_of.get(key, 0) == ctx
            for table in (self.blocks, self.segments, self.mapped):
                for key in [k for k in table if mine(k)]:
                    del table[key]
        elif action == "segment_unmap":
            ranges = self.mapped.get(optional_hex(obj, "segment"))
            if ranges is None:  # no segment field, or another one: look everywhere
                for r in self.mapped.values():
                    remove_range(r, ptr, ptr + size)
            else:
                remove_range(ranges, ptr, ptr + size)

    def largest_gap(self):
        """(largest free block, its address, its segment, regions): the largest range inside a
        region (a segment, or a run of mapped pages of an expandable segment) not covered by a
        block."""
        regions = [(base, base + size, base) for base, size in self.segments.items() if size > 0]
        for seg, ranges in self.mapped.items():
            for s, e in ranges:
                regions.append((s, e, seg if seg is not None else s))
        regions.sort()
        blocks = sorted((p, p + bs) for p, bs in self.blocks.items())
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


def second_pass(stream, log):
    targets = {}
    layouts = {}
    for dev, d in log.devices.items():
        if d.peak_reserved is not None and d.peak_reserved[0] > 0:
            targets[dev] = d.peak_reserved[3]
            layouts[dev] = Layout(d.no_free_completed())
    result = {}
    if not targets:
        return result
    last = max(targets.values())
    lineno = 0
    scan = json.decoder.JSONDecoder().scan_once
    for raw in stream:
        lineno += 1
        if lineno > last:
            break
        # The same checks as first_pass(): a fast path, then the careful one.
        try:
            text = raw.decode()
            obj, end = scan(text, 0)
            if end != len(text) and text[end:] not in ("\n", "\r\n"):
                raise ValueError
            action = obj["action"]
            if type(action) is not str or action not in LAYOUT_ACTIONS:
                raise ValueError
            dev = obj["dev"]
            size = obj["size"]
            ptr = obj["ptr"]
            if (type(obj["seq"]) is not int or type(obj["t_ns"]) is not int
                    or type(obj["tid"]) is not int or type(dev) is not int
                    or type(size) is not int or size < 0 or not ptr.startswith("0x")):
                raise ValueError
            ptr = int(ptr, 16)
            block_size = obj.get("block_size", size)
            segment = obj.get("segment")
            if type(block_size) is not int:
                raise ValueError
            if segment is not None and not (segment.startswith("0x") and int(segment, 16) >= 0):
                raise ValueError
        except Exception:
            try:
                obj = parse_line(raw)
                if obj is None:
                    continue
                action = obj.get("action")
                if type(action) is not str or action not in LAYOUT_ACTIONS:
                    continue
                seq, t_ns, tid, dev, ptr, size = decode_event(obj)
                block_size = check_layout_fields(obj, size)
            except Malformed:
                continue
        layout = layouts.get(dev)
        if layout is None:
            continue
        layout.apply(action, obj, ptr, size, block_size)
        if lineno == targets[dev]:
            result[dev] = layout.largest_gap()
            del layouts[dev]
            if not layouts:
                break
    return result


# ---- formatting ---------------------------------------------------------------------------------

def div_trunc(value, by):
    """Integer division toward zero, as C++ (and PyTorch's C++ counters) would print it."""
    return value // by if value >= 0 else -(-value // by)


def format_size(value, unit_ref):
    """memory_summary()'s size cell: the next binary prefix from 768 of it."""
    prefixes = ("B  ", "KiB", "MiB", "GiB", "TiB", "PiB")
    p = 0
    while p + 1 < len(prefixes) and unit_ref >= 768 * 1024:
        p += 1
        value = div_trunc(value, 1024)
        unit_ref /= 1024
    return "%6d %s" % (value, prefixes[p])


def format_count(value, unit_ref):
    """memory_summary()'s count cell: K, then M, from 750 thousand."""
    prefixes = (" ", "K", "M")
    p = 0
    while p + 1 < len(prefixes) and unit_ref >= 750 * 1000:
        p += 1
        value = div_trunc(value, 1000)
        unit_ref /= 1000
    return "%7d %s " % (value, prefixes[p])


METRICS = (
    ("allocated_bytes", "Allocated memory", format_size),
    ("active_bytes", "Active memory", format_size),
    ("requested_bytes", "Requested memory", format_size),
    ("reserved_bytes", "GPU reserved memory", format_size),
    ("inactive_split_bytes", "Non-releasable memory", format_size),
    ("allocation", "Allocations", format_count),
    ("active", "Active allocs", format_count),
    ("segment", "GPU reserved segments", format_count),
    ("inactive_split", "Non-releasable allocs", format_count),
)
FIELDS = ("current", "peak", "allocated", "freed")


def stat_row(stats, prefix):
    values = []
    for f in FIELDS:
        v = stats.get(prefix + f)
        if type(v) is not int:
            return None
        values.append(v)
    return values


def memory_table(stats, dev):
    """The statistics of one device in memory_summary()'s layout; rows whose statistics the stats
    do not hold are left out."""
    out = []

    def line(text):
        out.append("|" + text.ljust(TABLE_WIDTH) + "|")

    def row(name, values, ref, fmt):
        return (" %-21s | " % name + " | ".join(fmt(v, r) for v, r in zip(values, ref)) + " ")

    def number(name):
        v = stats.get(name)
        return "%-12d" % v if type(v) is int else "%-12s" % "-"

    line("=" * TABLE_WIDTH)
    line("                 cudapool memory summary, device ID %-17d" % dev)
    line("-" * TABLE_WIDTH)
    line("            OOMs: %s |       device alloc retries: %s" %
         (number("num_ooms"), number("num_alloc_retries").rstrip().ljust(8)))
    line("=" * TABLE_WIDTH)
    line("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ")
    for key, name, fmt in METRICS:
        ref = stat_row(stats, key + ".all.")
        if ref is None:
            continue
        line("-" * TABLE_WIDTH)
        line(row(name, ref, ref, fmt))
        for pool, pool_name in (("large_pool", "      from large pool"),
                                ("small_pool", "      from small pool")):
            values = stat_row(stats, "%s.%s." % (key, pool))
            if values is not None:
                line(row(pool_name, values, ref, fmt))
    for key, name in (("oversize_allocations", "Oversize allocations"),
                      ("oversize_segments", "Oversize GPU segments")):
        values = stat_row(stats, key + ".")
        if values is not None:
            line("-" * TABLE_WIDTH)
            line(row(name, values, values, format_count))
    line("=" * TABLE_WIDTH)
    if type(stats.get("num_device_alloc")) is int or type(stats.get("num_device_free")) is int:
        line(" device allocs: %s   device frees: %s" %
             (stats.get("num_device_alloc", "-"), stats.get("num_device_free", "-")))
        line("=" * TABLE_WIDTH)
    return out


def human(n):
    """A byte count for people: 512 B, 1.50 MiB (1572864 bytes)."""
    if type(n) is not int:
        return "?"
    if abs(n) < 1024:
        return "%d B" % n
    v = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        v /= 1024
        if abs(v) < 1024 or unit == "EiB":
            return "%.2f %s (%d bytes)" % (v, unit, n)


def hexstr(v):
    return "0x%x" % v if type(v) is int else str(v)


# ---- the report -------------------------------------------------------------------------------

def seconds(log, t_ns):
    if type(t_ns) is not int or log.first_t is None:
        return None
    return (t_ns - log.first_t) / 1e9


def build_report(log, layouts, name):
    """The report as one JSON-ready dict; the text report is printed from it."""
    rep = {"schema": REPORT_SCHEMA, "log": name, "header": log.header,
           "exited_normally": log.summary is not None,
           "lines": log.lines, "events": log.events, "actions": dict(sorted(log.actions.items())),
           "cache_hits": log.cache_hits,
           "malformed_lines": log.malformed, "problem_count": log.problem_count,
           "problems": [{"line": l, "what": w} for l, w in log.problems]}
    notes = list(log.notes)
    if log.lines == 0:
        notes.append("the log is empty")
    elif log.header is None:
        notes.append("the log has no header line")
    summary = log.summary
    if summary is not None:
        rep["summary"] = {k: summary.get(k) for k in ("seq", "t_ns", "events", "log_errors")}
        rep["summary"]["line"] = log.summary_line
        if type(summary.get("events")) is int and summary["events"] != log.events:
            notes.append("the summary counts %d events; the log holds %d valid event lines"
                         % (summary["events"], log.events))
        errors = summary.get("log_errors")
        if isinstance(errors, dict):
            if errors.get("write_failed"):
                notes.append("the log writer reported a failed write: lines are missing")
            if errors.get("records_lost"):
                notes.append("the log writer lost %s records" % errors.get("records_lost"))
        if log.events_after_summary:
            notes.append("%d events come after the summary line" % log.events_after_summary)
    else:
        rep["summary"] = None
    if log.seq_gaps:
        line, before, after = log.first_gap
        notes.append("seq is not consecutive %d time(s); first at line %d: seq %d after %d"
                     % (log.seq_gaps, line, after, before))
    unknown = sorted(a for a in log.actions if a not in KNOWN_ACTIONS)
    if unknown:
        notes.append("actions this report does not know, counted only: " + ", ".join(unknown))

    summary_devices = summary.get("devices") if summary is not None else None
    summary_devices = summary_devices if isinstance(summary_devices, dict) else {}
    dev_ids = set(log.devices)
    for key in summary_devices:
        try:
            dev_ids.add(int(key))
        except ValueError:
            notes.append("summary device %r is not a number: ignored" % key)
    devices = {}
    for dev in sorted(dev_ids):
        d = log.devices.get(dev) or Device(dev)
        entry = summary_devices.get(str(dev))
        stats = entry.get("stats") if isinstance(entry, dict) else None
        if len(d.contexts) > 1:
            notes.append("device %d: events of %d contexts' pools; the summary adds each pool's "
                         "peak, the events give the device's, so peaks are not compared"
                         % (dev, len(d.contexts)))
        if d.contexts_dropped:
            notes.append("device %d: its pool was dropped with its context %d time(s), the last "
                         "at seq %d, with %d block(s) (%d bytes) still allocated, which the driver "
                         "took (not leaks). The events' peaks cover the whole run; a summary line "
                         "describes only the pool made after the last drop"
                         % (dev, d.contexts_dropped, d.last_drop_seq, d.dropped_blocks,
                            d.dropped_bytes))
        if isinstance(stats, dict):
            source = "summary"
            for stat, mine, what in (("allocated_bytes.all.peak", d.allocated_bytes[1], "peak allocated"),
                                     ("reserved_bytes.all.peak", d.reserved_bytes[1], "peak reserved"),
                                     ("allocated_bytes.all.current", d.allocated_bytes[0], "allocated at exit"),
                                     ("reserved_bytes.all.current", d.reserved_bytes[0], "reserved at exit")):
                theirs = stats.get(stat)
                if (d.contexts_dropped or len(d.contexts) > 1) and stat.endswith(".peak"):
                    continue  # the summary's pools are the last ones, each with its own peak
                if type(theirs) is int and theirs != mine:
                    notes.append("device %d: %s is %d in the summary, %d from the events"
                                 % (dev, what, theirs, mine))
        else:
            source = "events"
            stats = d.implied_stats()
            if d.no_free_completed():
                notes.append("device %d: the log has no free_completed events: blocks are taken "
                             "to stop being active at free_requested" % dev)
        dr = {"stats_source": source, "stats": stats, "events": d.events}
        if d.peak_allocated is not None:
            b, seq, t, _ = d.peak_allocated
            dr["peak_allocated"] = {"bytes": b, "seq": seq, "t_ns": t, "time_s": seconds(log, t)}
        else:
            dr["peak_allocated"] = None
        frag = None
        if d.peak_reserved is not None:
            b, seq, t, _, allocated = d.peak_reserved
            dr["peak_reserved"] = {"bytes": b, "seq": seq, "t_ns": t, "time_s": seconds(log, t)}
            if dev in layouts:
                largest, at, seg, regions = layouts[dev]
                free = b - allocated
                frag = {"seq": seq, "t_ns": t, "time_s": seconds(log, t), "reserved": b,
                        "allocated": allocated, "free_cached": free,
                        "largest_free_block": largest,
                        "largest_free_block_ptr": hexstr(at) if at is not None else None,
                        "largest_free_block_segment": hexstr(seg) if seg is not None else None,
                        "fragmentation": round(1 - largest / free, 6) if free > 0 else 0.0,
                        "regions": regions,
                        "blocks_leave_at": "free_requested" if d.no_free_completed()
                        else "free_completed"}
                if largest > free:
                    notes.append("device %d: at the reserved peak the largest free block (%d) is "
                                 "larger than reserved - allocated (%d): the log is inconsistent"
                                 % (dev, largest, free))
        else:
            dr["peak_reserved"] = None
        dr["fragmentation"] = frag
        devices[str(dev)] = dr
    rep["devices"] = devices

    top = sorted(log.size_counts.items(), key=lambda kv: (-kv[1], -kv[0]))[:TOP]
    rep["allocs"] = log.actions.get("alloc", 0)
    rep["distinct_request_sizes"] = len(log.size_counts)
    rep["top_request_sizes"] = [{"size": s, "count": c} for s, c in top]
    rep["largest_requests"] = [
        {"size": s, "dev": dev, "seq": seq, "t_ns": t, "time_s": seconds(log, t)}
        for s, _, dev, seq, t in sorted(log.largest, key=lambda x: (-x[0], -x[1]))]
    rep["ooms"] = [dict({"dev": dev, "size": s, "seq": seq, "t_ns": t, "time_s": seconds(log, t)},
                        **({"explained": f} if f else {}))
                   for dev, s, seq, t, f in log.ooms]

    entries = []
    if summary is not None:
        source = "summary"
        leaks = summary.get("leaks")
        if leaks is None:
            leaks = []
        elif not isinstance(leaks, list):
            notes.append("summary leaks is not a list: ignored")
            leaks = []
        for l in leaks:
            if not isinstance(l, dict):
                continue
            bt = l.get("backtrace")
            entries.append({"dev": l.get("dev"), "ptr": l.get("ptr"), "size": l.get("size"),
                            "block_size": l.get("block_size"), "seq": l.get("seq"),
                            "t_ns": l.get("t_ns"), "time_s": seconds(log, l.get("t_ns")),
                            "tid": l.get("tid"),
                            "backtrace": bt if isinstance(bt, list) else []})
        # The writer lists them in the pool's order: oldest first reads better.
        entries.sort(key=lambda e: (e["seq"] if type(e["seq"]) is int else -1,
                                    e["dev"] if type(e["dev"]) is int else -1))
    else:
        source = "events"
        for dev in sorted(log.devices):
            for ptr, (size, bs, seq, t, tid, bt) in log.devices[dev].live.items():
                entries.append({"dev": dev, "ptr": hexstr(ptr), "size": size, "block_size": bs,
                                "seq": seq, "t_ns": t, "time_s": seconds(log, t), "tid": tid,
                                "backtrace": bt if isinstance(bt, list) else []})
        entries.sort(key=lambda e: (e["seq"], e["dev"]))
    rep["leaks"] = {
        "source": source,
        "last_seq": log.last_seq if source == "events" else None,
        "count": len(entries),
        "bytes": sum(e["block_size"] for e in entries if type(e["block_size"]) is int),
        "requested_bytes": sum(e["size"] for e in entries if type(e["size"]) is int),
        "entries": entries}
    rep["notes"] = notes
    return rep


def text_report(rep):
    out = []
    w = out.append
    h = rep["header"] or {}
    w("cudapool report: %s" % rep["log"])
    argv = h.get("argv")
    cmd = ""
    if isinstance(argv, list) and argv:
        cmd = "  (argv: %s)" % " ".join(shlex.quote(str(a)) for a in argv)
    w("  executable  %s%s" % (h.get("executable", "?"), cmd))
    w("  pid         %s on host %s" % (h.get("pid", "?"), h.get("host", "?")))
    w("  started     %s" % h.get("start_time", "?"))
    conf = h.get("conf")
    source = h.get("conf_source")
    w("  conf        %s%s" % (json.dumps(conf) if conf else "(none: the defaults)",
                              " from %s" % source if source else ""))
    options = h.get("options")
    if isinstance(options, dict) and options:
        w("  options     %s" % ", ".join("%s=%s" % (k, json.dumps(v)) for k, v in options.items()))
    devs = h.get("devices")
    if isinstance(devs, list):
        for dv in devs:
            if isinstance(dv, dict):
                w("  device %-4s %s, %s" % (dv.get("id", "?"), dv.get("name", "?"),
                                          human(dv.get("total_memory"))))
    w("  log         %d lines, %d events, %s" % (
        rep["lines"], rep["events"],
        "summary line at line %d: the process exited normally" % rep["summary"]["line"]
        if rep["exited_normally"] else
        "no summary line: the process did not exit normally"))
    if rep["malformed_lines"]:
        w("  malformed   %d line(s), skipped" % rep["malformed_lines"])
    if rep["problem_count"]:
        w("")
        w("Problems: %d (%s)" % (rep["problem_count"], "all listed" if rep["problem_count"] <= MAX_PROBLEMS
                                 else "the first %d listed" % MAX_PROBLEMS))
        for p in rep["problems"]:
            w("  line %d: %s" % (p["line"], p["what"]))
    w("")
    w("Events: " + (", ".join("%s %d" % kv for kv in rep["actions"].items()) or "none"))
    if rep["allocs"]:
        w("  cache hits: %d of %d allocs" % (rep["cache_hits"], rep["allocs"]))

    for dev, dr in rep["devices"].items():
        w("")
        if dr["stats_source"] == "summary":
            w("Statistics of device %s (the summary line at exit):" % dev)
        else:
            w("Statistics of device %s: the process did not exit normally; these are the "
              "statistics its events imply:" % dev)
        out.extend(memory_table(dr["stats"], int(dev)))
        w("")
        w("Peaks, device %s:" % dev)
        for key, name in (("peak_allocated", "peak allocated"), ("peak_reserved", "peak reserved")):
            p = dr[key]
            if p is None:
                w("  %-15s none (no %s events)" % (name, "alloc" if key == "peak_allocated"
                                                     else "segment"))
            else:
                w("  %-15s %s at %.6f s (seq %d)" % (name, human(p["bytes"]), p["time_s"], p["seq"]))
        f = dr["fragmentation"]
        w("")
        if f is None:
            w("Fragmentation at the reserved peak, device %s: none (no segment events)" % dev)
        else:
            w("Fragmentation at the reserved peak, device %s (%.6f s, seq %d):"
              % (dev, f["time_s"], f["seq"]))
            w("  reserved            %s" % human(f["reserved"]))
            w("  allocated           %s" % human(f["allocated"]))
            w("  free cached         %s  (reserved - allocated)" % human(f["free_cached"]))
            at = ""
            if f["largest_free_block_ptr"] is not None:
                at = "  at %s in segment %s" % (f["largest_free_block_ptr"],
                                                f["largest_free_block_segment"])
            w("  largest free block  %s%s" % (human(f["largest_free_block"]), at))
            w("  fragmentation       %.4f  (1 - largest free block / free cached)"
              % f["fragmentation"])
            w("  regions             %d  (segments and runs of mapped pages)" % f["regions"])
            if f["blocks_leave_at"] == "free_requested":
                w("  (the log has no free_completed events: blocks leave at free_requested)")

    w("")
    w("Most frequent request sizes (%d allocs, %d distinct sizes):"
      % (rep["allocs"], rep["distinct_request_sizes"]))
    if rep["top_request_sizes"]:
        w("       count  size")
        for e in rep["top_request_sizes"]:
            w("  %10d  %s" % (e["count"], human(e["size"])))
    else:
        w("  none")
    w("")
    w("Largest requests:")
    if not rep["largest_requests"]:
        w("  none")
    for e in rep["largest_requests"]:
        w("  %-32s dev %-3d seq %-10d at %.6f s" % (human(e["size"]), e["dev"], e["seq"],
                                                  e["time_s"]))
    if rep["ooms"]:
        w("")
        w("Out of memory: %d oom event(s)%s:" % (rep["actions"].get("oom", 0),
                                                 ", the first %d" % TOP if rep["actions"].get("oom", 0) > TOP else ""))
        for e in rep["ooms"]:
            w("  %-32s dev %-3d seq %-10d at %.6f s" % (human(e["size"]), e["dev"], e["seq"],
                                                      e["time_s"]))
            for line in explain_oom(e.get("explained"), e["dev"]):
                w("    " + line)

    lk = rep["leaks"]
    w("")
    if lk["source"] == "summary":
        w("Leaks (from the summary line): %d block%s still allocated at exit, %s in blocks"
          % (lk["count"], "" if lk["count"] == 1 else "s", human(lk["bytes"])))
    else:
        w("Leaks: the process did not exit normally; %d block%s still allocated at the last event "
          "(%s), %s in blocks" % (lk["count"], "" if lk["count"] == 1 else "s",
                                  "seq %d" % lk["last_seq"] if lk["last_seq"] is not None
                                  else "none: no events", human(lk["bytes"])))
    for e in lk["entries"][:TEXT_LEAKS]:
        t = e["time_s"]
        w("  dev %s  ptr %s  size %s B  block %s B  seq %s  at %s  thread %s" % (
            e["dev"], e["ptr"], e["size"], e["block_size"], e["seq"],
            "%.6f s" % t if t is not None else "?", e["tid"]))
        for frame in e["backtrace"]:
            w("      %s" % frame)
    if lk["count"] > TEXT_LEAKS:
        w("  ... and %d more (--json lists them all)" % (lk["count"] - TEXT_LEAKS))
    if rep["notes"]:
        w("")
        w("Notes:")
        for n in rep["notes"]:
            w("  " + n)
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(
        prog="cudapool report",
        description="Report on a cudapool allocation log (cudapool.log/1).")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument("log", metavar="LOG", help="the log file, or - for stdin")
    args = parser.parse_args(argv)

    spool = None
    try:
        if args.log == "-":
            spool = tempfile.TemporaryFile()
            log = first_pass(sys.stdin.buffer, spool)
            spool.seek(0)
            layouts = second_pass(spool, log)
        else:
            with open(args.log, "rb") as f:
                log = first_pass(f, None)
            layouts = {}
            if any(d.peak_reserved for d in log.devices.values()):
                with open(args.log, "rb") as f:
                    layouts = second_pass(f, log)
    except OSError as e:
        print("cudapool report: cannot read %s: %s" % (args.log, e.strerror or e), file=sys.stderr)
        return 1
    finally:
        if spool is not None:
            spool.close()

    rep = build_report(log, layouts, "<stdin>" if args.log == "-" else args.log)
    try:
        if args.json:
            json.dump(rep, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(text_report(rep))
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
