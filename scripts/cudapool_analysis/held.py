# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/held.py: memory held over time (issue 31; docs/report.md, "Held over time")
in words: `cudapool report --level LEVEL` read (parse_level: the same forms as the engine's
tools/analyze/held_report.h, which computes every figure), the text report's lines of a device
(and of all devices together) from the report's "held" objects: the time-weighted mean of
allocated and of reserved bytes over the log's span, and how long reserved bytes stayed above the
level; and the page's part (page_held), which page/held.js draws.

Not here: any figure (the engine's; tests/oracle/held.py is its test oracle), the rest of the
text (text.py) and of the page (htmlreport.py, page/report.js).
"""

import re
from fractions import Fraction

DEFAULT_LEVEL = "0.5"
LEVEL_FORMS = ("a fraction of the peak with a decimal point, 0 to 1 (0.5: half the peak "
               "reserved), or a size: bytes, or a number with a unit K, M, G or T, any case, "
               "with or without B or iB (512M, 10G, 2gib, 1.5T; G = GiB = 2^30 bytes)")
UINT64_MAX = (1 << 64) - 1
SHIFTS = {"k": 10, "m": 20, "g": 30, "t": 40}


def parse_level(text):
    """("of_peak", Fraction) for a fraction of the peak (digits, a point, 1 to 9 decimals; at
    most 1), else ("bytes", n) for a size as the tools take sizes (tools/replay/bytes_arg.h: a
    fraction of a unit rounded down to a byte). Raises ValueError for anything else."""
    m = re.fullmatch(r"([0-9]{1,9})\.([0-9]{1,9})", text)
    if m and Fraction(int(m.group(1) + m.group(2)), 10 ** len(m.group(2))) <= 1:
        return "of_peak", Fraction(int(m.group(1) + m.group(2)), 10 ** len(m.group(2)))
    m = re.fullmatch(r"([0-9]+)(?:\.([0-9]{1,9}))?([A-Za-z]*)", text)
    if m:
        whole, decimals, unit = int(m.group(1)), m.group(2), m.group(3).lower()
        shift = None
        if unit in ("", "b"):
            shift = 0 if decimals is None else None
        elif unit[0] in SHIFTS and unit[1:] in ("", "b", "ib"):
            shift = SHIFTS[unit[0]]
        if shift is not None and whole <= UINT64_MAX >> shift:
            part = 0 if decimals is None else \
                (int(decimals) << shift) // 10 ** len(decimals)
            if (whole << shift) + part <= UINT64_MAX:
                return "bytes", (whole << shift) + part
    raise ValueError("not a level: %r: a level is %s" % (text, LEVEL_FORMS))


def level_arg(text):
    """argparse's type of --level: the text as given, once it parses."""
    try:
        parse_level(text)
    except ValueError as e:
        import argparse
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _short(n):
    from .text import short     # text.py imports this module: its helpers are taken when used
    return short(n) if type(n) is int and 0 <= n <= UINT64_MAX else _human(n)


def _human(n):
    from .text import human
    return human(n)


def level_words(level):
    """How the level was chosen, in words: "half the peak", "0.25 of the peak", "--level 10G"."""
    if level["of_peak"] is None:
        return "--level %s" % level["given"]
    if level["of_peak"] == 0.5:
        return "half the peak"
    return "%s of the peak" % level["given"]


def secs(s):
    return "%.6f s" % s


def above_words(r, span_s, level):
    """The time reserved bytes stayed above the level, e.g. "stayed above 22.50 GiB (half the
    peak) for 4.100000 s, 6.6% of the time"."""
    lo, share = r["above_s"], r["share"]
    when = "for %s, %.1f%% of the time" % (secs(lo), 100 * share)
    if r["unsure_ns"]:
        hi = (r["above_ns"] + r["unsure_ns"]) / 1e9
        when = ("for %s to %s, %.1f%% to %.1f%% of the time (the log holds so many distinct "
                "figures that some near the level share a bin)"
                % (secs(lo), secs(hi), 100 * share, 100 * hi / span_s))
    return "stayed above %s (%s) %s" % (_short(r["level"]), level_words(level), when)


def part_lines(part, span_s, level, replayed=None):
    """The lines of one device's (or all devices') figures; replayed: the replay's, for a log of
    requests only (its reserved bytes are those of the replay)."""
    out = []
    a = part["allocated"]
    out.append("  mean allocated  %s" % (_human(a["mean"]) if a is not None and
                                         a["mean"] is not None else
                                         "none (no alloc events)" if a is None else
                                         "left out (see the notes)"))
    r, how = part["reserved"], ""
    if r is None and replayed is not None and replayed["reserved"] is not None:
        r, how = replayed["reserved"], ", as replayed (the log has no segment events)"
    if r is None:
        out.append("  mean reserved   none (no segment events)")
        return out
    out.append("  mean reserved   %s%s" % (_human(r["mean"]) if r["mean"] is not None
                                         else "left out (see the notes)", how))
    out.append("  time above      reserved %s%s" % (above_words(r, span_s, level), how))
    return out


def held_lines(rep, dev=None):
    """The text report's section "Held over time" of one device (dev) or, dev None, of all
    devices together (its peak first)."""
    h = rep["held"]
    replay = rep.get("replay") or {}
    if dev is None:
        part, replayed, where = h, replay.get("held"), "all devices together"
    else:
        part = rep["devices"][dev]["held"]
        replayed = (replay.get("devices") or {}).get(dev, {}).get("held")
        where = "device %s" % dev
    span_s = h["span_s"]
    if span_s is None:
        return ["Held over time, %s: none (no events)" % where]
    if span_s == 0:
        return ["Held over time, %s: no time span (the log's first and last events are at the "
                "same time): no mean, no time above a level" % where]
    out = ["Held over time, %s (over the log's span, its first event to its last: %s):"
           % (where, secs(span_s))]
    if dev is None and h["peak_reserved"] is not None:
        p = h["peak_reserved"]
        out.append("  peak reserved   %s at %.6f s (seq %d), the devices' reserved bytes added up"
                   % (_human(p["bytes"]), p["time_s"], p["seq"]))
    return out + part_lines(part, span_s, h["level"], replayed)


def page_held(rep):
    """The page's "held" of one log (page/held.js draws it): the report's objects as they are,
    the replay's beside them for a log of requests only."""
    replay = rep.get("replay")
    return {"log": rep["held"],
            "devices": {dev: dr["held"] for dev, dr in rep["devices"].items()},
            "replay": None if not replay else {
                "log": replay["held"],
                "devices": {dev: dr["held"] for dev, dr in replay["devices"].items()}}}
