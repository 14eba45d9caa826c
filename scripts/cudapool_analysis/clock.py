# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/clock.py: the wall clock of a log's events, one rule for every output that
puts logs side by side or on real time: the Perfetto export (perfetto.py: each log a process on
one time axis), the memory_viz export (memviz.py: time_us), the HTML page (timeaxis.one_clock:
the ranks' charts on one axis).

An event's t_ns is CLOCK_MONOTONIC; the header's start_unix_ns and start_t_ns are the wall clock
and CLOCK_MONOTONIC read together at the start, so an event's wall time is start_unix_ns + t_ns -
start_t_ns. A header without start_t_ns (logs of earlier versions) puts its first event at its
start_unix_ns; one without either at a fallback (the earliest start of the logs read with it).
Several logs count from the earliest start_unix_ns among them (time_zero_ns).

Not here: what each output does with the times.
"""

from . import vocabulary as v


class Clock:
    """The wall clock (ns since the Unix epoch) of a log's t_ns (CLOCK_MONOTONIC), from its header:
    start_unix_ns + (t_ns - start_t_ns) when the header has both; else the first event is put at
    start_unix_ns (how: "first event"); else at `fallback_ns` (how: "none"). `how` says which.
    Without start_t_ns the first wall_ns() call fixes the offset: make it with the first event's
    t_ns."""

    def __init__(self, header, fallback_ns=0):
        h = header or {}
        unix = h.get("start_unix_ns")
        mono = h.get("start_t_ns")
        self.start_unix_ns = unix if v.fits(unix, v.UINT) else None
        mono = mono if v.fits(mono, v.UINT) else None
        if self.start_unix_ns is not None and mono is not None:
            self.offset = self.start_unix_ns - mono
            self.how = "start_t_ns"
        else:
            self.offset = None   # set by the first event
            self.how = "first event" if self.start_unix_ns is not None else "none"
        self.fallback_ns = fallback_ns

    def wall_ns(self, t_ns):
        if self.offset is None:
            start = self.start_unix_ns if self.start_unix_ns is not None else self.fallback_ns
            self.offset = start - t_ns
        return t_ns + self.offset


def time_zero_ns(headers):
    """The time zero of several logs: the earliest start_unix_ns among their headers (None
    entries allowed), 0 when none has one."""
    starts = [h["start_unix_ns"] for h in headers
              if h and v.fits(h.get("start_unix_ns"), v.UINT)]
    return min(starts) if starts else 0


def clock_note(path, clock):
    """What a note says of a log (among several) whose header lacks start_t_ns; None when it has
    it."""
    if clock.how == "start_t_ns":
        return None
    return "%s: the header has no start_t_ns: its first event is put at %s" % (
        path, "its start_unix_ns" if clock.how == "first event"
        else "the earliest start of the logs (it has no start_unix_ns either)")
