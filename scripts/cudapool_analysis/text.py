# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/text.py: the report (the engine's report object, engine.py) as text for
people: the header, the statistics of each device (the engine's lines of the
torch.cuda.memory_summary() table: pool/summary.h, the shim's own formatter), peaks, the bytes
held over time (held.py's lines), fragmentation, request sizes, oom events with the explanation
the shim printed (the engine's lines: pool/oom.h), leaks, notes; for several logs the cross-rank
table. A byte figure or count no device can have (the report's "impossible" list) is printed as
"impossible", never as a size. Every string that comes from the log (paths, header fields, device
names, actions, frames, problems, notes) is cut and escaped for the terminal (terminal.shown).

Not here: any figure or line of text that is not in the report dict (the engine makes them all)."""

import json
import shlex
import textwrap

from . import vocabulary as v
from .held import held_lines
from .terminal import MAX_NOTE, cut, shown

TEXT_LEAKS = 100     # leaks listed in the text report (--json lists all)
TOP = 10             # request-size rows, oom events a report lists (the engine's kTop)
IMPOSSIBLE = "impossible"


def possible(value):
    """Whether value (an int) is a figure a device can have: 0 to 2**64-1."""
    return v.fits(value, v.UINT)


def human(n):
    """A byte count for people: 512 B, 1.50 MiB (1572864 bytes); one no device can have:
    impossible (N bytes)."""
    if type(n) is not int:
        return "?"
    if not possible(n):
        return "%s (%d bytes)" % (IMPOSSIBLE, n)
    if abs(n) < 1024:
        return "%d B" % n
    x = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        x /= 1024
        if abs(x) < 1024 or unit == "EiB":
            return "%.2f %s (%d bytes)" % (x, unit, n)


def wrapped(text, indent, width=100):
    """text as lines of at most width characters (words kept whole), each after indent."""
    return "\n".join(textwrap.wrap(text, width, initial_indent=indent,
                                    subsequent_indent=indent + "  ", break_long_words=False,
                                    break_on_hyphens=False)) or indent


def short(n):
    """A byte count for a table: 512 B, 1.50 MiB; "-" for none."""
    if type(n) is not int:
        return "-"
    return human(n).split(" (")[0]


def text_report(rep):
    """One log's report."""
    out = []
    w = out.append
    h = rep["header"] or {}
    w("cudapool report: %s" % rep["log"])   # inputs.display_name(): escaped
    vd = rep.get("verdict")
    if vd:                                  # the answer first (verdict.py)
        w("")
        for line in vd["lines"]:
            w(wrapped(shown(line["text"]), "  "))
        w("")
    argv = h.get("argv")
    cmd = ""
    if isinstance(argv, list) and argv:
        cmd = "  (argv: %s)" % shown(" ".join(shlex.quote(str(a)) for a in argv))
    w("  executable  %s%s" % (shown(h.get("executable", "?")), cmd))
    w("  pid         %s on host %s" % (h.get("pid", "?"), shown(h.get("host", "?"))))
    w("  started     %s" % shown(h.get("start_time", "?")))
    conf = h.get("conf")
    source = h.get("conf_source")
    w("  conf        %s%s" % ('"%s"' % shown(conf, quote='"') if conf else "(none: the defaults)",
                              " from %s" % shown(source) if source else ""))
    options = h.get("options")
    if isinstance(options, dict) and options:
        # json.dumps writes printable ASCII only (ensure_ascii): cut, nothing to escape
        w("  options     %s" % cut(", ".join("%s=%s" % (shown(k), cut(json.dumps(x)))
                                             for k, x in options.items()), MAX_NOTE))
    devs = h.get("devices")
    if isinstance(devs, list):
        for dv in devs:
            if isinstance(dv, dict):
                w("  device %-4s %s, %s" % (dv.get("id", "?"), shown(dv.get("name", "?")),
                                          human(dv.get("total_memory"))))
    w("  log         %d lines, %d events, %s" % (rep["lines"], rep["events"],
                                                 rep["ending"]["text"]))
    if rep["malformed_lines"]:
        w("  malformed   %d line(s), skipped" % rep["malformed_lines"])
    if rep["problem_count"]:
        w("")
        listed = len(rep["problems"])   # the engine keeps the first 100
        w("Problems: %d (%s)" % (rep["problem_count"], "all listed" if rep["problem_count"] <= listed
                                 else "the first %d listed" % listed))
        for p in rep["problems"]:
            w("  line %d: %s" % (p["line"], shown(p["what"], MAX_NOTE)))
    w("")
    w("Events: " + (", ".join("%s %d" % (shown(a), n) for a, n in rep["actions"].items())
                    or "none"))
    replay = rep.get("replay")
    if rep["allocs"]:
        if rep["cache_hits"] is None:
            w("  cache hits: unknown (the log records no pool decisions)%s" % (
                "; as replayed: %d of %d allocs" % (replay["cache_hits"], replay["allocs"])
                if replay else ""))
        else:
            w("  cache hits: %d of %d allocs" % (rep["cache_hits"], rep["allocs"]))
    if replay and replay["devices"]:
        settings = replay["settings"]
        w("")
        w("This log holds requests only (no pool decisions: no block sizes, no segments). The "
          "figures marked \"as replayed\" come from cudapool's replay of it through its pool "
          "under the header's settings (conf %s), as `cudapool replay` (and `cudapool demo`) "
          "prints them: what the pool would have done, not a record of a run."
          % ('"%s"' % shown(settings, quote='"') if settings else "(none: the defaults)"))

    for dev, dr in rep["devices"].items():
        rd = (replay or {}).get("devices", {}).get(dev)
        w("")
        if rd is not None:
            w("Statistics of device %s, as replayed:" % dev)
            out.extend(rd["summary_table"])
        elif dr["stats_source"] == "summary":
            w("Statistics of device %s (the summary line at exit):" % dev)
            out.extend(dr["summary_table"])
        else:
            w("Statistics of device %s: no summary line was read; these are the statistics its "
              "events imply:" % dev)
            out.extend(dr["summary_table"])
        w("")
        w("Peaks, device %s:" % dev)
        for key, name in (("peak_allocated", "peak allocated"), ("peak_reserved", "peak reserved")):
            p = dr[key]
            if p is None and rd is not None and rd[key] is not None:
                p = rd[key]
                w("  %-15s %s at %.6f s (seq %d), as replayed (the log has no segment events)"
                  % (name, human(p["bytes"]), p["time_s"], p["seq"]))
            elif p is None:
                w("  %-15s none (no %s events)" % (name, "alloc" if key == "peak_allocated"
                                                     else "segment"))
            else:
                w("  %-15s %s at %.6f s (seq %d)" % (name, human(p["bytes"]), p["time_s"], p["seq"]))
        w("")
        out.extend(held_lines(rep, dev))
        f, how = dr["fragmentation"], ""
        if f is None and rd is not None and rd["fragmentation"] is not None:
            f, how = rd["fragmentation"], ", as replayed"
        w("")
        if f is None:
            w("Fragmentation at the reserved peak, device %s: none (no segment events)" % dev)
        else:
            out.extend(fragmentation_text(dev, f, how))

    if len(rep["devices"]) > 1:
        w("")
        out.extend(held_lines(rep))
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
            for line in e.get("explanation", ()):
                w("    " + line)

    out.extend(leaks_text(rep["leaks"]))
    if rep["notes"]:
        w("")
        w("Notes:")
        for n in rep["notes"]:
            w("  " + shown(n, MAX_NOTE))
    return "\n".join(out) + "\n"


def fragmentation_text(dev, f, how):
    """The fragmentation at the reserved peak (docs/report.md, "Words and figures")."""
    out = ["Fragmentation at the reserved peak, device %s%s (%.6f s, seq %d):"
           % (dev, how, f["time_s"], f["seq"])]
    w = out.append
    w("  reserved            %s" % human(f["reserved"]))
    w("  allocated           %s" % human(f["allocated"]))
    w("  fenced              %s  (%s: not free)" % (human(f["fenced"]),
                                                    v.FIGURE_WORDS["fenced"]))
    w("  free cached         %s  (%s)" % (human(f["free_cached"]), v.FIGURE_WORDS["free"]))
    at = ""
    if f["largest_free_block_ptr"] is not None:
        at = "  at %s in segment %s" % (f["largest_free_block_ptr"],
                                        f["largest_free_block_segment"])
    w("  largest free block  %s%s" % (human(f["largest_free_block"]), at))
    if f["fragmentation"] is None:
        w("  fragmentation       %s  (its figures are)" % IMPOSSIBLE)
    else:
        w("  fragmentation       %.4f  (%s)" % (f["fragmentation"],
                                                  v.FIGURE_WORDS["fragmentation"]))
    w("  regions             %d  (segments and runs of mapped pages)" % f["regions"])
    if f["blocks_leave_at"] == "free_requested":
        w("  (the log has no free_completed events: blocks leave at free_requested)")
    return out


def plural(n, what):
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def leaks_text(lk):
    """The blocks alive at exit (the report's "leaks"): counted from the events; listed from the
    summary line (each entry the events do not bear out marked) or, without one, from the events;
    then by site and size, long-lived or growing (not all of them are leaks)."""
    out = [""]
    w = out.append
    if lk["source"] == "summary":
        w("Blocks alive at exit (listed by the summary line, counted from the events): %s still "
          "allocated at exit, %s in blocks" % (plural(lk["count"], "block"), human(lk["bytes"])))
    else:
        w("Blocks alive at exit: no summary line was read; %s still allocated at the last event "
          "(%s), %s in "
          "blocks" % (plural(lk["count"], "block"), "seq %d" % lk["last_seq"]
                      if lk["last_seq"] is not None else "none: no events", human(lk["bytes"])))
    for e in lk["entries"][:TEXT_LEAKS]:
        t = e["time_s"]
        w("  dev %s  ptr %s  size %s B  block %s B  seq %s  at %s  thread %s" % (
            *("?" if e[k] is None else shown(e[k]) for k in ("dev", "ptr", "size", "block_size",
                                                              "seq")),
            "%.6f s" % t if t is not None else "?", "?" if e["tid"] is None else e["tid"]))
        if e.get("events") is not None:
            w("      (not as the events have it: %s; %s)" % (
                e["events"]["why"], "counted as they have it" if e["events"]["counted"]
                else "not counted"))
        for frame in e["backtrace"]:
            w("      %s" % shown(frame))
    if lk["listed"] > TEXT_LEAKS:
        w("  ... and %d more listed (--json lists them all)" % (lk["listed"] - TEXT_LEAKS))
    rest = lk["not_listed"]
    if rest is not None and rest["count"]:
        w("  ... and %d more block%s alive at exit (%s requested, %s in blocks) not listed in "
          "the summary" % (rest["count"], "" if rest["count"] == 1 else "s", human(rest["size"]),
                           human(rest["block_size"])))
    out.extend(alive_by_site_text(lk.get("by_site")))
    return out


ALIVE_SHOWN = 10     # groups of blocks alive at exit listed in the text (--json: 25)


def alive_by_site_text(by):
    """The blocks alive at exit grouped by site and size: which are long-lived (weights, optimizer
    state: not leaks), which grow through the run (a leak's signature), and how that was decided."""
    if not by or not by["group_count"]:
        return []
    k = by["kinds"]
    out = ["", "Blocks alive at exit by site and size: %s" % ", ".join(
        "%s %s (%s, %s)" % (name, plural(k[name]["groups"], "group"),
                            plural(k[name]["blocks"], "block"), short(k[name]["bytes"]))
        for name in ("long-lived", "growing", "after the peak") if k[name]["groups"])]
    w = out.append
    w("  (how: %s)" % by["rule"])
    for g in by["groups"][:ALIVE_SHOWN]:
        w("  %-15s %s x %s = %s, dev %d, seq %d..%d%s" % (
            g["kind"], g["count"], short(g["block_size"]), short(g["bytes"]), g["dev"],
            g["first_seq"], g["last_seq"],
            ", site %s" % shown(g["backtrace"][0]) if g["backtrace"] else ", no backtrace"))
    if by["group_count"] > ALIVE_SHOWN:
        w("  ... and %d more groups (--json lists %d)" % (by["group_count"] - ALIVE_SHOWN,
                                                         by["groups_listed"]))
    return out


def ranks_text(multi):
    """The cross-rank table of several logs (the engine's "ranks"), one row per log and device."""
    rows = multi["ranks"]
    out = ["Ranks: %d logs%s" % (len(rows), "" if all(r["rank_from"] == "header" for r in rows)
                                 else " (a rank the header does not name: the log's place in the "
                                 "order given, from 0)"),
           "  %4s  %-16s %6s  %-15s %-15s %6s %10s  %s" % (
               "rank", "host", "device", "peak allocated", "peak reserved", "OOMs", "events",
               "log")]
    best = None
    for r in rows:
        host = shown(r["host"], 16) if isinstance(r["host"], str) else "?"
        for d in r["devices"] or [{"dev": "-", "peak_allocated": None, "peak_reserved": None,
                                   "ooms": r["ooms"], "events": r["events"]}]:
            out.append("  %4d  %-16s %6s  %-15s %-15s %6d %10d  %s%s" % (
                r["rank"], host, d["dev"], short(d["peak_allocated"]), short(d["peak_reserved"]),
                d["ooms"], d["events"], r["log"],
                {"read": "", "too long": "  (summary line too long to read)"}.get(
                    r["ending"], "  (no summary line)")))
            if type(d["peak_reserved"]) is int and (best is None or d["peak_reserved"] > best[0]):
                best = (d["peak_reserved"], r["rank"], d["dev"])
    if best is not None:
        out.append("  largest peak reserved: rank %d, device %s, %s" % (best[1], best[2],
                                                                     human(best[0])))
    for note in multi["notes"]:
        out.append("  note: " + shown(note, MAX_NOTE))
    return "\n".join(out) + "\n"


def several_text(multi):
    """Several logs: each log's report, then the cross-rank table."""
    return "\n".join(text_report(rep) for rep in multi["logs"]) + "\n" + ranks_text(multi)
