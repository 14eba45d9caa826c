# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/report.py: what `cudapool report` says about a log (docs/log-format.md, "Who
reads what"), as one JSON-ready dict ("schema": "cudapool.report/1"): the header, line and event
counts, per device the statistics (the summary line's, else what the events imply), the peaks,
the fragmentation at the reserved peak and the bytes held over time (held_pass.py; and of all devices
together), request sizes, oom events, leaks, problems and notes. For
several logs (the ranks of one job) also the cross-rank table: per log its rank, host, devices,
peaks, oom and event counts. Byte figures are exact sums; one that no 64-bit device can hold
(2**64 or more, or negative: a log whose events or summary are inconsistent) is named as
impossible (impossible(): listed, and named in the notes), and the printed report says so
instead of a size.

read_log() runs the two passes (accounting.py, layout.py) over a file (for stdin or a pipe, the
copy reader.open_log() makes). Not here: parsing (reader.py), printing (text.py), the command
line (cli.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

from cudapool_analysis import vocabulary as v
from cudapool_analysis.inputs import ended_early
from cudapool_analysis.rank import header_rank
from oracle.reader import LogError, display_name, not_a_log, open_log

from . import held_pass as held
from .accounting import TOP, Device, first_pass
from .ending import ending
from .layout import second_pass
from .leaks import leak_report

PEAK_CHECKS = tuple((v.stat(stat), what) for stat, what in (
    ("allocated_bytes.all.peak", "peak allocated"), ("reserved_bytes.all.peak", "peak reserved"),
    ("allocated_bytes.all.current", "allocated at exit"),
    ("reserved_bytes.all.current", "reserved at exit")))
# Statistics that are not figures of bytes or counts (-1: unlimited).
NOT_FIGURES = frozenset((v.stat("max_split_size"),))
IMPOSSIBLE_SHOWN = 6   # impossible figures named in one device's note


def read_log(path, index=0, hooks=None, level=held.DEFAULT_LEVEL):
    """(report dict, its cross-rank row) of the log at path, '-' for stdin; index: its place in
    the order given. Raises LogError when it cannot be read or is not a log at all.
    hooks (the HTML page's, htmlreport.py), when given, rides along the two passes: hooks.first
    is first_pass()'s observe; hooks.stops(run), after it, gives second_pass()'s further stops
    (then the second pass runs even without a reserved peak); hooks.second its observe;
    hooks.request_sizes False leaves the request-size tables empty (they grow with the distinct
    sizes)."""
    name = display_name(path)
    f = open_log(path)      # stdin, a pipe: inputs.py's one copy of it, read again here
    try:
        run = first_pass(f, hooks.first if hooks else None,
                         request_sizes=hooks is None or hooks.request_sizes)
        stops = hooks.stops(run) if hooks else None
        layouts = {}
        if stops or any(d.peak_reserved for d in run.devices.values()):
            f.seek(0)
            layouts = second_pass(f, run, stops, hooks.second if hooks else None)
        end = ending(run, f, ended_early(path))
    except OSError as e:
        raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
    finally:
        f.close()
    r = run.reader
    if r.lines == 0 or (r.header is None and r.events == 0 and r.summary is None):
        raise LogError(not_a_log(name, r.lines, run.problems))
    rep = build_report(run, layouts, name, end, level)
    return rep, rank_row(rep, run, index)


def build_report(run, layouts, name, end, level=held.DEFAULT_LEVEL):
    """The report of one log as one JSON-ready dict; the text report is printed from it. end:
    how the log ends (ending.ending()); level: --level's text (the time above it, held_pass.py)."""
    r = run.reader
    problems = run.problems
    rep = {"schema": v.REPORT_SCHEMA, "log": name, "header": r.header,
           "exited_normally": None if end.get("requests_only") and end["summary"] == "none"
           else end["summary"] != "none", "ending": end,
           "lines": r.lines, "events": r.events, "actions": dict(sorted(run.actions.items())),
           "cache_hits": run.cache_hits,
           "malformed_lines": problems.malformed, "problem_count": problems.count,
           "problems": [{"line": l, "what": w} for l, w in problems.listed]}
    notes = list(r.notes)
    if r.header is None:
        notes.append("the log has no header line")
    summary = r.summary
    if summary is not None:
        rep["summary"] = {k: summary.get(k) for k in ("seq", "t_ns", "events", "log_errors")}
        rep["summary"]["line"] = r.summary_line
        if type(summary.get("events")) is int and summary["events"] != r.events:
            notes.append("the summary counts %d events; the log holds %d valid event lines"
                         % (summary["events"], r.events))
        errors = summary.get("log_errors")
        if isinstance(errors, dict):
            if errors.get("write_failed"):
                notes.append("the log writer reported a failed write: lines are missing")
            if errors.get("records_lost"):
                notes.append("the log writer lost %s records" % errors.get("records_lost"))
        if r.events_after_summary:
            notes.append("%d events come after the summary line" % r.events_after_summary)
    else:
        rep["summary"] = None
    if run.seq_gaps:
        line, before, after = run.first_gap
        notes.append("seq is not consecutive %d time(s); first at line %d: seq %d after %d"
                     % (run.seq_gaps, line, after, before))
    unknown = sorted(a for a in run.actions if a not in v.KNOWN_ACTIONS)
    if unknown:
        notes.append("actions this report does not know, counted only: " + ", ".join(unknown))
    rep["devices"] = device_reports(run, layouts, notes)
    for dev, dr in rep["devices"].items():
        dr["held"], over = held.of_device(run.held, int(dev), level, dr)
        notes.extend(held.overflow_notes("device " + dev, over))
    rep["held"], over = held.whole(run.held, level, rep["devices"])
    notes.extend(held.overflow_notes("all devices", over))
    rep["replay"] = None        # a log of requests only: pagedata.requests_only() sets it

    top = sorted(run.size_counts.items(), key=lambda kv: (-kv[1], -kv[0]))[:TOP]
    rep["allocs"] = run.actions.get("alloc", 0)
    rep["distinct_request_sizes"] = len(run.size_counts)
    rep["top_request_sizes"] = [{"size": s, "count": c} for s, c in top]
    rep["largest_requests"] = [
        {"size": s, "dev": dev, "seq": seq, "t_ns": t, "time_s": run.seconds(t)}
        for s, _, dev, seq, t in sorted(run.largest, key=lambda x: (-x[0], -x[1]))]
    rep["ooms"] = [dict({"dev": dev, "size": s, "seq": seq, "t_ns": t, "time_s": run.seconds(t)},
                        **({"explained": f} if f else {}))
                   for dev, s, seq, t, f in run.ooms]
    rep["leaks"] = leak_report(run, notes)
    rep["impossible"] = impossible(rep)
    for dev, names in group_by_device(rep["impossible"]):
        notes.append("%s: impossible figure%s (negative, or 2**64 or more: beyond any 64-bit "
                     "device; the log is inconsistent): %s"
                     % (dev, "" if len(names) == 1 else "s", ", ".join(names[:IMPOSSIBLE_SHOWN])
                        + (", ..." if len(names) > IMPOSSIBLE_SHOWN else "")))
    rep["notes"] = notes
    return rep


def impossible(rep):
    """[{"where", "what", "value"}] of the report's figures that are sums no device can have:
    statistics (bytes and counts), peaks, the reserved peak's layout, the leaks' totals."""
    out = []

    def check(where, what, value):
        if type(value) is int and not v.fits(value, v.UINT):
            out.append({"where": where, "what": what, "value": value})

    def check_means(where, h):
        for key in ("allocated", "reserved"):
            if h[key] is not None:
                check(where, "mean " + key, h[key]["mean"])
    for dev, dr in rep["devices"].items():
        where = "device " + dev
        for name, value in (dr["stats"] or {}).items():
            if name not in NOT_FIGURES:
                check(where, name, value)
        for key in ("peak_allocated", "peak_reserved"):
            check(where, key.replace("_", " "), (dr[key] or {}).get("bytes"))
        f = dr["fragmentation"] or {}
        for key in ("reserved", "allocated", "fenced", "free_cached"):
            check(where, "%s at the reserved peak" % key.replace("_", " "), f.get(key))
        check_means(where, dr["held"])
    check_means("all devices", rep["held"])
    lk = rep["leaks"]
    check("leaks", "bytes in blocks", lk["bytes"])
    check("leaks", "requested bytes", lk["requested_bytes"])
    return out


def group_by_device(figures):
    """[(where, ["what = value", ...])] in the order first met."""
    groups = {}
    for x in figures:
        groups.setdefault(x["where"], []).append("%s = %d" % (x["what"], x["value"]))
    return list(groups.items())


def device_reports(run, layouts, notes):
    """Per device (a string key): its statistics and their source, peaks and fragmentation."""
    summary = run.reader.summary
    summary_devices = (summary.get("devices") or {}) if summary is not None else {}
    dev_ids = set(run.devices) | {int(key) for key in summary_devices}
    devices = {}
    for dev in sorted(dev_ids):
        d = run.devices.get(dev) or Device(dev)
        entry = summary_devices.get(str(dev))
        stats = entry.get("stats") if entry is not None else None
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
        if stats is not None:
            source = "summary"
            mine = {PEAK_CHECKS[0][0]: d.allocated_bytes[1], PEAK_CHECKS[1][0]: d.reserved_bytes[1],
                    PEAK_CHECKS[2][0]: d.allocated_bytes[0], PEAK_CHECKS[3][0]: d.reserved_bytes[0]}
            for stat, what in PEAK_CHECKS:
                theirs = stats.get(stat)
                if (d.contexts_dropped or len(d.contexts) > 1) and stat.endswith(".peak"):
                    continue  # the summary's pools are the last ones, each with its own peak
                if type(theirs) is int and theirs != mine[stat]:
                    notes.append("device %d: %s is %d in the summary, %d from the events"
                                 % (dev, what, theirs, mine[stat]))
        else:
            source = "events"
            stats = d.implied_stats()
            if d.no_free_completed():
                notes.append("device %d: the log has no free_completed events: blocks are taken "
                             "to stop being active at free_requested" % dev)
        dr = {"stats_source": source, "stats": stats, "events": d.events}
        if d.peak_allocated is not None:
            b, seq, t, _ = d.peak_allocated
            dr["peak_allocated"] = {"bytes": b, "seq": seq, "t_ns": t, "time_s": run.seconds(t)}
        else:
            dr["peak_allocated"] = None
        frag = None
        if d.peak_reserved is not None:
            b, seq, t, _, allocated, active, set_action, set_ptr, set_size = d.peak_reserved
            dr["peak_reserved"] = {"bytes": b, "seq": seq, "t_ns": t, "time_s": run.seconds(t)}
            if dev in layouts:
                largest, at, seg, regions, largest_before = layouts[dev]
                # docs/report.md, "Words and figures": fenced bytes are not free
                fenced = 0 if d.no_free_completed() else active - allocated
                free = b - allocated - fenced
                possible = all(v.fits(x, v.UINT) for x in (b, allocated, fenced, free))
                frag = {"seq": seq, "t_ns": t, "time_s": run.seconds(t), "reserved": b,
                        "allocated": allocated, "fenced": fenced, "free_cached": free,
                        "largest_free_block": largest,
                        "largest_free_block_ptr": v.hex_text(at) if at is not None else None,
                        "largest_free_block_segment": v.hex_text(seg) if seg is not None
                        else None,
                        # None: its figures are impossible (impossible())
                        "fragmentation": None if not possible
                        else round(1 - largest / free, 6) if free > 0 else 0.0,
                        "regions": regions,
                        "blocks_leave_at": "free_requested" if d.no_free_completed()
                        else "free_completed",
                        "set_by": {"action": set_action, "ptr": v.hex_text(set_ptr),
                                   "size": set_size},
                        "before": {"free_cached": free - set_size if free >= set_size else None,
                                   "largest_free_block": largest_before},
                        "request": None if d.peak_request is None else dict(
                            zip(("size", "block_size", "seq"), d.peak_request))}
                if possible and largest > free:
                    notes.append("device %d: at the reserved peak the largest free block (%d) is "
                                 "larger than the free bytes, reserved - allocated - fenced (%d): "
                                 "the log is inconsistent"
                                 % (dev, largest, free))
        else:
            dr["peak_reserved"] = None
        dr["fragmentation"] = frag
        devices[str(dev)] = dr
    return devices


# ---- several logs: the cross-rank table ---------------------------------------------------------

def rank_row(rep, run, index):
    """One log's row of the cross-rank table: rank (from the header, else its place), host, and
    per device the events' peaks, oom and event counts."""
    rank = header_rank(rep["header"])
    h = rep["header"] or {}
    devices = []
    for dev, dr in rep["devices"].items():
        d = run.devices.get(int(dev))
        devices.append({"dev": int(dev),
                        "peak_allocated": (dr["peak_allocated"] or {}).get("bytes"),
                        "peak_reserved": (dr["peak_reserved"] or {}).get("bytes"),
                        "ooms": d.num_ooms if d is not None else 0,
                        "events": dr["events"]})
    return {"rank": rank if rank is not None else index,
            "rank_from": "header" if rank is not None else "order",
            "log": rep["log"], "host": h.get("host"), "pid": h.get("pid"),
            "events": rep["events"], "ooms": rep["actions"].get("oom", 0),
            "exited_normally": rep["exited_normally"], "ending": rep["ending"]["summary"],
            "devices": devices}


def several(reports, rows):
    """The JSON report of several logs: each log's report, the cross-rank table by rank, and
    notes (a rank that several logs name)."""
    rows = sorted(rows, key=lambda row: row["rank"])
    logs_of = {}
    for row in rows:
        logs_of.setdefault(row["rank"], []).append(row["log"])
    notes = ["rank %d is named by %d logs: %s" % (rank, len(logs), ", ".join(logs))
             for rank, logs in logs_of.items() if len(logs) > 1]
    return {"schema": v.REPORT_SCHEMA, "logs": reports, "ranks": rows, "notes": notes}
