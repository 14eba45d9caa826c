# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/pagedata.py: what the HTML page shows of one log, as a JSON-ready dict,
gathered while report.read_log() reads it (the same two passes as `cudapool report`, so every
peak in the page is the report's figure): the run, per device the peaks, the downsampled
timeline (timeline.py), the segment maps at the reserved peak and at the end (segmap.py), the
allocation sites (sites.py) with their frames named (frames.py: library + offset from the
summary line's modules, the leaks' symbols), the oom events with their figures (oom.py), the
leaks.

A log without pool decisions (request-only: alloc/free without block_size or segment events)
has no segment layout of its own: its maps, and the reserved bytes over time, are those of the
C++ replay of the log under its own settings (replayed.pool_events(), which writes that replay as
a log), read the same way and labelled as the replay's.

log_data() is the Python oracle of the analysis engine's `page` object (cudapool-analyze,
docs/analysis-format.md), which the page is drawn from: tests/cli/analyze_agree.sh compares them
on every log of the suite; `report --html` runs no pass of its own. The page's time axis of
several logs is the shipped package's (cudapool_analysis/timeaxis.py).

Not here: the figures (accounting.py, layout.py, report.py), naming a frame (frames.py), the
wall clock (clock.py), writing the page (htmlreport.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import os

from cudapool_analysis.frames import Frames
from oracle.reader import Malformed

from .oom import oom_figures
from .ending import requests_only as requests_only_ending
from .replayed import pool_events
from .report import read_log
from .segmap import Detail, snapshot
from .sites import Sites, at_peak, leak_groups
from .symbols import Addr2Line
from .timeline import Timeline


MAX_LEAKS = 200          # leaks listed one by one (all are counted, and grouped by stack)
MAX_PROBLEMS = 20
RUN_FIELDS = ("executable", "argv", "pid", "host", "start_time", "version", "conf",
              "conf_source", "options")


class Hooks:
    """report.read_log()'s hooks for the page. The first pass feeds the timeline (which passes
    the sites' counts on and keeps the oom events); the second pass, beside each device's
    layout, the blocks' states and sites (segmap.Detail), and stops at the device's reserved
    peak and last event (a device with segments: the segment maps) and at its allocated peak (a
    log with backtraces, sites=True: the sites at the peak). The page shows no request sizes:
    their tables, which grow with the distinct sizes, are not kept."""

    request_sizes = False

    def __init__(self, sites=True):
        self.want_sites = sites
        self.sites = Sites()
        self.timeline = Timeline(self.sites.count)
        self.details = {}
        self.peak_maps = {}
        self.exit_maps = {}
        self.peak_sites = {}
        self.run = None
        self.first = self.timeline.observe

    def stops(self, run):
        self.run = run
        stops = {}

        def at(line, dev, table, take):
            stops.setdefault(line, []).append(
                (dev, lambda layout: table.__setitem__(dev, take(layout, self.details[dev]))))
        for dev, d in run.devices.items():
            if d.num_device_alloc:
                if d.peak_reserved is not None and d.peak_reserved[0] > 0:
                    at(d.peak_reserved[3], dev, self.peak_maps, snapshot)
                at(self.timeline.devices[dev].last_line, dev, self.exit_maps, snapshot)
            if self.want_sites and self.sites.frames and d.peak_allocated is not None:
                at(d.peak_allocated[3], dev, self.peak_sites,
                   lambda layout, detail: at_peak(detail.allocated(layout), self.sites))
        for entries in stops.values():
            for dev, _ in entries:
                if dev not in self.details:
                    self.details[dev] = Detail(run.devices[dev].no_free_completed())
        return stops

    def second(self, dev, line, seq, t_ns, ctx, action, ptr, size, block_size, segment, obj):
        detail = self.details.get(dev)
        if detail is not None:
            detail.event(action, ptr, size, seq,
                         self.sites.site(obj) if action == "alloc" and self.want_sites else None)


def time_of(rep_dev_peak, key):
    p = rep_dev_peak.get(key)
    return None if p is None else {"seq": p["seq"], "time_s": p["time_s"]}


def device_maps(hooks, rep):
    """dev -> {"peak": the map at the reserved peak, "exit": at the end}, for the page."""
    out = {}
    for dev, dr in rep["devices"].items():
        m = {}
        if int(dev) in hooks.peak_maps:
            m["peak"] = dict(hooks.peak_maps[int(dev)], **time_of(dr, "peak_reserved"))
        if int(dev) in hooks.exit_maps:
            m["exit"] = hooks.exit_maps[int(dev)]
        out[dev] = m
    return out


def run_info(rep, duration):
    h = rep["header"] or {}
    info = {k: h.get(k) for k in RUN_FIELDS}
    info["devices"] = h.get("devices") or []
    info["duration_s"] = duration
    for k in ("lines", "events", "actions", "exited_normally", "ending", "malformed_lines",
              "problem_count", "cache_hits", "allocs", "notes"):
        info[k] = rep[k]
    info["problems"] = rep["problems"][:MAX_PROBLEMS]
    return info


def oom_entries(hooks, run):
    """The page's oom entries. An entry with figures has no "explanation" here: the engine's is
    pool/oom.cpp's text (the shim's), which this oracle does not copy (the comparisons leave it
    out: tests/cli/analyze_compare.py text_left_out); one without says why it has none."""
    out = []
    for dev, size, seq, t_ns, obj in hooks.timeline.ooms:
        try:
            f = oom_figures(obj, size)
        except Malformed as e:
            f = None
            why = "its figures are malformed (%s)" % e
        else:
            why = None if f else "the event carries no explanation (not written by the shim)"
        entry = {"dev": dev, "size": size, "seq": seq, "time_s": (t_ns - run.first_t) / 1e9,
                 "cause": f["cause"] if f else None, "figures": f}
        if not f:
            entry["explanation"] = [why]
        out.append(entry)
    return out


def log_data(path, index):
    """(page dict of the log at path, report dict, cross-rank row). Raises reader.LogError, also
    when a request-only log needs the replay and it cannot run (replayed.pool_events())."""
    with pool_events(path) as pool_path:
        return gather(path, index, pool_path)


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def gather(path, index, pool_path):
    own = same_file(path, pool_path)
    hooks = Hooks()
    rep, row = read_log(path, index, hooks=hooks)
    run = hooks.run
    timelines = hooks.timeline.result(run)
    maps = device_maps(hooks, rep)
    devices = {}
    names = {str(x.get("id")): x for x in (rep["header"] or {}).get("devices") or []
             if isinstance(x, dict)}
    for dev, dr in rep["devices"].items():
        devices[dev] = {
            "name": names.get(dev, {}).get("name"),
            "total_memory": names.get(dev, {}).get("total_memory"),
            "peak_allocated": dr["peak_allocated"], "peak_reserved": dr["peak_reserved"],
            "fragmentation": dr["fragmentation"], "events": dr["events"],
            "stats_source": dr["stats_source"],
            "timeline": timelines.get(dev),
            "maps": maps.get(dev, {}),
            "sites_at_peak": hooks.peak_sites.get(int(dev)),
        }
    has_layout = any(d.num_device_alloc for d in run.devices.values())
    # the frames' texts: the libraries' own symbols and lines (eu-addr2line), library + offset,
    # the leaks' symbols
    frames = Frames(run.reader.summary, Addr2Line())
    leaks = rep["leaks"]["entries"]
    data = {"log": rep["log"], "index": index, "rank": row["rank"], "rank_from": row["rank_from"],
            "run": run_info(rep, hooks.timeline.duration()), "devices": devices,
            "layout_source": "log" if own and has_layout else None, "layout_note": None,
            "replay": None,
            "clock": dict({k: (rep["header"] or {}).get(k) for k in ("start_unix_ns",
                                                                      "start_t_ns")},
                          first_t_ns=hooks.timeline.t0),     # one_clock() makes it the page's
            "ooms": oom_entries(hooks, run), "oom_count": rep["actions"].get("oom", 0),
            "leaks": dict({k: rep["leaks"][k] for k in ("source", "count", "bytes", "last_seq",
                                                        "listed", "not_listed")},
                          entries=[dict(e, backtrace=frames.texts(e["backtrace"]))
                                   for e in leaks[:MAX_LEAKS]],
                          groups=leak_groups(leaks, frames),
                          by_site=dict(rep["leaks"]["by_site"], groups=[
                              dict(g, backtrace=frames.texts(g["backtrace"]))
                              for g in rep["leaks"]["by_site"]["groups"]])),
            "sites": dict(hooks.sites.named(frames), frequent=hooks.sites.most_frequent())}
    if not own:
        hooks = run = None          # the log's live blocks and segments go before the replay's
        data["replay"], replayed = replay_data(pool_path)
        data["layout_source"] = "replay"
        requests_only(rep, replayed)
        data["run"].update({k: rep[k] for k in ("exited_normally", "ending", "cache_hits")})
    elif not has_layout:
        data["layout_note"] = "the log has no segment events"
    return data, rep, row


def requests_only(rep, replayed):
    """The report of a log the engine replays (no pool decision), given its replay's report: the
    "replay" object (the figures the log cannot have, as replayed under the header's settings);
    with allocs (requests only by construction) its cache hits unknown and its ending no verdict
    of a kill (ending.requests_only())."""
    rh = replayed["header"] or {}
    rep["replay"] = {
        "settings": rh.get("conf"), "settings_from": "the log's header",
        "cache_hits": replayed["cache_hits"], "allocs": replayed["allocs"],
        "devices": {dev: {k: dr[k] for k in ("stats_source", "stats", "events", "peak_allocated",
                                             "peak_reserved", "fragmentation", "held")}
                    for dev, dr in replayed["devices"].items()},
        "held": replayed["held"]}
    if rep["allocs"]:
        rep["cache_hits"] = None
        rep["ending"] = requests_only_ending(rep["ending"])
        if rep["ending"]["summary"] == "none":
            rep["exited_normally"] = None
    return rep


def replay_data(pool_path):
    """(page part, report) of the replay's log (pool decisions of the C++ pool under the log's
    own settings), read the same way: per device its peaks, timeline and maps."""
    hooks = Hooks(sites=False)
    rep, _ = read_log(pool_path, 0, hooks=hooks)
    run = hooks.run
    timelines = hooks.timeline.result(run)
    maps = device_maps(hooks, rep)
    h = rep["header"] or {}
    return {"conf": h.get("conf"), "events": rep["events"], "first_t_ns": hooks.timeline.t0,
            "cache_hits": rep["cache_hits"],
            "devices": {
        dev: {"peak_allocated": dr["peak_allocated"], "peak_reserved": dr["peak_reserved"],
              "fragmentation": dr["fragmentation"], "timeline": timelines.get(dev),
              "maps": maps.get(dev, {})} for dev, dr in rep["devices"].items()}}, rep
