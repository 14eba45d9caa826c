# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/timeaxis.py: the HTML page's one time axis for its logs (`report --html`):
with several logs whose runs overlap in time (the ranks of one job), every chart counts from the
earliest start among them, on the wall clock (clock.Clock, the Perfetto export's rule); one log,
or runs far apart, count from each log's first event. It works on the engine's `page` objects
(docs/analysis-format.md), in place. Not here: the wall clock of one log (clock.py), the page's
data and file (htmlreport.py), the charts (page/report.js).
"""

from .clock import Clock, clock_note, time_zero_ns


def one_clock(logs):
    """The page's time axis, for its logs' data (the engine's page objects): with several logs every
    chart counts from the earliest start among them (clock.time_zero_ns, each log's events on the
    wall clock: clock.Clock, the Perfetto export's rule), so that the ranks' charts line up, when
    their runs overlap in time (runs_overlap); one log, or runs apart in time, count from each log's
    first event. Each timeline keeps its times (since its log's first event: the report's time_s)
    and gets offset_s, where its t = 0 lies on that axis; each log's clock becomes {how, offset_s}.
    Returns the page's {"zero" ("first event" or "earliest start"), "start_time" (the earliest
    log's, several logs), "range" (several logs: the part of the axis every chart shows),
    "notes"}."""
    several = len(logs) > 1 and runs_overlap(logs)
    zero = time_zero_ns([l["clock"] for l in logs]) if several else None
    start_time = next((l["run"]["start_time"] for l in logs
                       if several and l["clock"]["start_unix_ns"] == zero), None)
    lo = hi = 0.0
    notes = []
    for l in logs:
        c = l["clock"]
        clock = Clock(c, fallback_ns=zero or 0)
        first = clock.wall_ns(c["first_t_ns"]) if c["first_t_ns"] is not None else None
        origin = zero if several else first
        spans = [(l["devices"], c["first_t_ns"])]      # the log's timelines, the replay's
        if l["replay"] is not None:
            spans.append((l["replay"]["devices"], l["replay"].pop("first_t_ns")))
        for devices, t0 in spans:
            off = 0.0 if t0 is None or origin is None else (clock.wall_ns(t0) - origin) / 1e9
            for d in devices.values():
                tl = d["timeline"]
                if tl:
                    tl["offset_s"] = off
                    lo, hi = min(lo, off), max(hi, off + (tl["t"][-1] if tl["t"] else 0.0))
        l["clock"] = {"how": clock.how, "offset_s": 0.0 if first is None or origin is None
                      else (first - origin) / 1e9}
        note = clock_note(l["log"], clock) if several and first is not None else None
        if note:
            notes.append(note)
    if len(logs) > 1 and not several:
        notes.append("the runs lie far apart in time (more than a minute, and more than the "
                     "longest run, between one's end and another's start): each chart counts from "
                     "its own log's first event")
    return {"zero": "earliest start" if several else "first event", "start_time": start_time,
            "range": [lo, hi] if several else None, "notes": notes}


GAP_APART_NS = 60 * 10**9   # runs further apart than this (and than the longest run) are apart


def runs_overlap(logs):
    """Whether the logs' runs (first to last event, on the wall clock) lie close enough in time
    for one axis: the gap between the earliest end and the latest start is at most a minute or
    the longest run, whichever is more. Ranks of one job are; runs an hour apart are not (one
    axis would show each of them as a sliver)."""
    zero = time_zero_ns([l["clock"] for l in logs])
    starts, ends = [], []
    for l in logs:
        c = l["clock"]
        if c["first_t_ns"] is None:
            continue
        clock = Clock(c, fallback_ns=zero)
        first = clock.wall_ns(c["first_t_ns"])
        longest = max((d["timeline"]["t"][-1] for d in l["devices"].values()
                       if d["timeline"] and d["timeline"]["t"]), default=0.0)
        starts.append(first)
        ends.append(first + int(longest * 1e9))
    if not starts:
        return True
    longest = max(e - b for b, e in zip(starts, ends))
    return max(starts) - min(ends) <= max(GAP_APART_NS, longest)
