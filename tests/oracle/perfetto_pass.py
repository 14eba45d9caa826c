# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/perfetto_pass.py: the Perfetto export's figures of one log computed in
Python, as `cudapool export --perfetto` computed them before the engine did (cudapool-analyze
--perfetto, perfetto_trace.h): accounting.py's first pass (its own copy of the pool's state)
observed after each event, a request-only log first replayed by cudapool-replay (pool_log.py).
Kept as the oracle the engine is checked against (tests/cli/perfetto_agree.sh): the same trace,
byte for byte. Not used by the command line.

Not here: the trace's JSON (cudapool_analysis/perfetto.render, shared by both), the engine's side
(cudapool_analysis/perfetto.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

from cudapool_analysis.clock import Clock, time_zero_ns
from cudapool_analysis.inputs import ended_early
from cudapool_analysis.perfetto import POINT_FIELDS, INSTANT_FIELDS, INSTANTS, STATE, LogData, render
from oracle.reader import LogError, display_name, not_a_log, open_log

from .accounting import first_pass
from .downsample import Downsampler
from .pool_log import check_logs, pool_log


class _Observer:
    """first_pass's observer: the counters (a Downsampler per device) and the instants."""

    def __init__(self, clock, max_points, max_instants):
        self.clock = clock
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
                s = self.series[d.dev] = Downsampler(self.max_points, len(POINT_FIELDS))
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


def log_data(path, header, base_ns, max_points, max_instants):
    """One log's LogData, computed in Python. Raises LogError for a log that cannot be read."""
    shown = display_name(path)
    seen = _Observer(Clock(header, fallback_ns=base_ns), max_points, max_instants)
    with pool_log(path) as events_path:
        replayed = events_path != path
        try:
            with open_log(events_path) as f:
                run = first_pass(f, observe=seen.observe, request_sizes=False)
        except OSError as e:
            raise LogError("cannot read %s: %s" % (shown, e.strerror or e)) from None
    r = run.reader
    if r.header is None and r.events == 0 and r.summary is None:
        raise LogError(not_a_log(shown, r.lines, run.problems))
    devices = []
    for dev in sorted(set(run.devices)):
        d = run.devices[dev]
        s = seen.series.get(dev)
        devices.append({"dev": dev, "num_device_alloc": d.num_device_alloc,
                        "no_free_completed": d.no_free_completed(),
                        "peak_allocated": d.allocated_bytes[1],
                        "peak_reserved": d.reserved_bytes[1],
                        "points": s.points() if s is not None else None})
    return LogData(shown, header if header is not None else r.header, seen.clock, replayed,
                   r.events, ended_early(path), r.devices.notes(), devices, seen.instants,
                   seen.instant_counts)


def export(paths, out, max_points, max_instants):
    """The trace of the logs at paths written to the text file out, by the Python pass; returns
    the notes (perfetto.export's)."""
    headers = check_logs(paths)
    base_ns = time_zero_ns(headers)
    logs = [log_data(p, h, base_ns, max_points, max_instants) for p, h in zip(paths, headers)]
    return render(out, logs, base_ns, max_points, max_instants)
