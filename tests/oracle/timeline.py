# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/timeline.py: allocated, reserved and active bytes of each device over time,
downsampled for the HTML page (htmlreport.py) while the first pass reads the log.

The figures are accounting.py's: Timeline.observe() is first_pass()'s observer and reads each
Device's counters after every event that changes them; nothing is counted twice. Each device's
series (allocated, reserved, active, reserved - allocated) goes through downsample.Downsampler
(the rule the Perfetto export uses too): at most BUCKETS buckets of time, each keeping the states
where a series is lowest and highest, the first and the last state always. Every peak is
therefore exact, at the time it was first reached; a device with fewer changes than that gets
every one of them. Events that mark a moment (oom, empty_cache, segment_refused) are kept as
times, the first MAX_MARKS; the first MAX_OOMS oom events whole (for their explanations). An
alloc event with a backtrace goes on to on_alloc (sites.py counts them): one observer per event,
the cheapest for a pass that calls it ten million times.

Times are seconds since the log's first event (t0), the report's time_s; each device's timeline
also says where that t = 0 lies on the page's time axis (offset_s: 0 for a page of one log;
pagedata.one_clock puts several logs on one wall clock, clock.py).

Not here: the figures themselves (accounting.py), the downsampling rule (downsample.py), drawing
(page/report.js).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

from cudapool_analysis import vocabulary as v

from .downsample import Downsampler
from .pystacks import RESOLVED

BUCKETS = 4096                 # per device: at most 2 * 4 * BUCKETS + 2 points
SERIES = 4                     # allocated, reserved, active, reserved - allocated
STATE_ACTIONS = v.actions("alloc", "free_requested", "free_completed", "segment_alloc",
                          "segment_free", "segment_map", "segment_unmap", "context_dropped")
MARKED = v.actions("oom", "empty_cache", "segment_refused")
MAX_MARKS = 1000
MAX_OOMS = 1000


class DeviceTimeline:
    def __init__(self):
        self.samples = Downsampler(limit=2 * SERIES * BUCKETS + 2, values=SERIES)
        self.changes = 0
        self.last_line = None   # the device's last event
        self.marks = {}     # action -> [t_ns]


class Timeline:
    """first_pass()'s observer: per device a DeviceTimeline; result() is the page's data."""

    def __init__(self, on_alloc=None):
        self.t0 = None
        self.t_last = None
        self.devices = {}
        self.marks = 0
        self.ooms = []      # (dev, size, seq, t_ns, obj) of the first MAX_OOMS oom events
        self.on_alloc = on_alloc

    def observe(self, d, line, seq, t_ns, ctx, action, ptr, size, block_size, segment, obj):
        if self.t0 is None:
            self.t0 = t_ns
        self.t_last = t_ns
        tl = self.devices.get(d.dev)
        if tl is None:
            tl = self.devices[d.dev] = DeviceTimeline()
        tl.last_line = line
        if action in STATE_ACTIONS:
            tl.changes += 1
            a = d.allocated_bytes[0]
            r = d.reserved_bytes[0]
            tl.samples.add(t_ns, (a, r, d.active_bytes[0], r - a))
            if (action == "alloc" and ("backtrace" in obj or RESOLVED in obj)
                    and self.on_alloc is not None):
                self.on_alloc(obj, block_size)
        elif action in MARKED:
            if self.marks < MAX_MARKS:
                self.marks += 1
                tl.marks.setdefault(action, []).append(t_ns)
            if action == "oom" and len(self.ooms) < MAX_OOMS:
                self.ooms.append((d.dev, size, seq, t_ns, obj))

    def duration(self):
        """Seconds from the first event to the last, or None without events."""
        return None if self.t0 is None else (self.t_last - self.t0) / 1e9

    def result(self, run):
        """dev -> the page's timeline of the device: columns t (s from the first event),
        allocated, reserved, active; reserved is None for a device without segment events,
        active None for a log without free_completed (active is then allocated: accounting's
        rule); offset_s 0 (pagedata.one_clock sets it)."""
        out = {}
        t0 = self.t0
        for dev, tl in self.devices.items():
            if not tl.changes:
                continue        # only pass-through events: nothing to draw
            d = run.devices[dev]
            points = tl.samples.points()
            has_reserved = d.num_device_alloc > 0 or d.reserved_bytes[1] > 0
            out[str(dev)] = {
                "t": [(t - t0) / 1e9 for t, _ in points],
                "allocated": [p[0] for _, p in points],
                "reserved": [p[1] for _, p in points] if has_reserved else None,
                "active": None if d.no_free_completed() else [p[2] for _, p in points],
                "changes": tl.changes, "points": len(points),
                "exact": len(points) == tl.changes,
                "bucket_s": tl.samples.width / 1e9,
                "marks": {a: [(t - t0) / 1e9 for t in ts] for a, ts in tl.marks.items()},
                "offset_s": 0.0,
            }
        return out
