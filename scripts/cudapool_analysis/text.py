"""cudapool_analysis/text.py: the report (report.py's dict) as text for people: the header, the
statistics of each device in torch.cuda.memory_summary()'s layout (sizes switch to KiB, MiB, ...
from 768 of the unit, counts to K, M from 750 thousand), peaks, fragmentation, request sizes,
oom explanations, leaks, notes; for several logs the cross-rank table. A byte figure or count no
device can have (report.impossible()) is printed as "impossible", never as a size. Every string
that comes from the log (paths, header fields, device names, actions, frames, problems, notes)
is cut and escaped for the terminal (terminal.shown).

Not here: any figure that is not in the report dict (report.py computes them all).
"""

import json
import shlex

from . import vocabulary as v
from .accounting import TOP
from .oom import explain_oom
from .reader import MAX_PROBLEMS
from .terminal import MAX_NOTE, cut, shown

TEXT_LEAKS = 100     # leaks listed in the text report (--json lists all)
TABLE_WIDTH = 75
IMPOSSIBLE = "impossible"


def div_trunc(value, by):
    """Integer division toward zero, as C++ (and PyTorch's C++ counters) would print it."""
    return value // by if value >= 0 else -(-value // by)


def possible(value):
    """Whether value (an int) is a figure a device can have: 0 to 2**64-1."""
    return v.fits(value, v.UINT)


def format_size(value, unit_ref):
    """memory_summary()'s size cell: the next binary prefix from 768 of it."""
    if not possible(value):
        return "%10s" % IMPOSSIBLE
    if not possible(unit_ref):
        unit_ref = value
    prefixes = ("B  ", "KiB", "MiB", "GiB", "TiB", "PiB")
    p = 0
    while p + 1 < len(prefixes) and unit_ref >= 768 * 1024:
        p += 1
        value = div_trunc(value, 1024)
        unit_ref /= 1024
    return "%6d %s" % (value, prefixes[p])


def format_count(value, unit_ref):
    """memory_summary()'s count cell: K, then M, from 750 thousand."""
    if not possible(value):
        return "%10s" % IMPOSSIBLE
    if not possible(unit_ref):
        unit_ref = value
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
SINGLES = (("oversize_allocations", "Oversize allocations"),
           ("oversize_segments", "Oversize GPU segments"))
POOLS = (("large_pool", "      from large pool"), ("small_pool", "      from small pool"))
# Every name the table reads is a statistic of the log (vocabulary.stat fails at import if not).
for _key, _, _ in METRICS:
    for _pool in ("all",) + tuple(p for p, _ in POOLS):
        v.stat("%s.%s.current" % (_key, _pool))
for _key, _ in SINGLES:
    v.stat(_key + ".current")
NUM_OOMS, NUM_RETRIES, NUM_DEVICE_ALLOC, NUM_DEVICE_FREE = (v.stat(n) for n in (
    "num_ooms", "num_alloc_retries", "num_device_alloc", "num_device_free"))


def stat_row(stats, prefix):
    values = []
    for f in v.STAT_FIELDS:
        x = stats.get(prefix + f)
        if type(x) is not int:
            return None
        values.append(x)
    return values


def memory_table(stats, dev):
    """The statistics of one device in memory_summary()'s layout; rows whose statistics the stats
    do not hold are left out."""
    out = []

    def line(text):
        out.append("|" + text.ljust(TABLE_WIDTH) + "|")

    def row(name, values, ref, fmt):
        return (" %-21s | " % name + " | ".join(fmt(x, r) for x, r in zip(values, ref)) + " ")

    def number(name):
        x = stats.get(name)
        return "%-12d" % x if type(x) is int else "%-12s" % "-"

    line("=" * TABLE_WIDTH)
    line("                 cudapool memory summary, device ID %-17d" % dev)
    line("-" * TABLE_WIDTH)
    line("            OOMs: %s |       device alloc retries: %s" %
         (number(NUM_OOMS), number(NUM_RETRIES).rstrip().ljust(8)))
    line("=" * TABLE_WIDTH)
    line("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ")
    for key, name, fmt in METRICS:
        ref = stat_row(stats, key + ".all.")
        if ref is None:
            continue
        line("-" * TABLE_WIDTH)
        line(row(name, ref, ref, fmt))
        for pool, pool_name in POOLS:
            values = stat_row(stats, "%s.%s." % (key, pool))
            if values is not None:
                line(row(pool_name, values, ref, fmt))
    for key, name in SINGLES:
        values = stat_row(stats, key + ".")
        if values is not None:
            line("-" * TABLE_WIDTH)
            line(row(name, values, values, format_count))
    line("=" * TABLE_WIDTH)
    if type(stats.get(NUM_DEVICE_ALLOC)) is int or type(stats.get(NUM_DEVICE_FREE)) is int:
        line(" device allocs: %s   device frees: %s" %
             (stats.get(NUM_DEVICE_ALLOC, "-"), stats.get(NUM_DEVICE_FREE, "-")))
        line("=" * TABLE_WIDTH)
    return out


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
        w("Problems: %d (%s)" % (rep["problem_count"], "all listed" if rep["problem_count"] <= MAX_PROBLEMS
                                 else "the first %d listed" % MAX_PROBLEMS))
        for p in rep["problems"]:
            w("  line %d: %s" % (p["line"], shown(p["what"], MAX_NOTE)))
    w("")
    w("Events: " + (", ".join("%s %d" % (shown(a), n) for a, n in rep["actions"].items())
                    or "none"))
    if rep["allocs"]:
        w("  cache hits: %d of %d allocs" % (rep["cache_hits"], rep["allocs"]))

    for dev, dr in rep["devices"].items():
        w("")
        if dr["stats_source"] == "summary":
            w("Statistics of device %s (the summary line at exit):" % dev)
        else:
            w("Statistics of device %s: no summary line was read; these are the statistics its "
              "events imply:" % dev)
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
            if f["fragmentation"] is None:
                w("  fragmentation       %s  (its figures are)" % IMPOSSIBLE)
            else:
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

    out.extend(leaks_text(rep["leaks"]))
    if rep["notes"]:
        w("")
        w("Notes:")
        for n in rep["notes"]:
            w("  " + shown(n, MAX_NOTE))
    return "\n".join(out) + "\n"


def plural(n, what):
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def leaks_text(lk):
    """The leaks: counted from the events; listed from the summary line (each entry the events
    do not bear out marked) or, without one, from the events."""
    out = [""]
    w = out.append
    if lk["source"] == "summary":
        w("Leaks (listed by the summary line, counted from the events): %s still allocated at exit, "
          "%s in blocks" % (plural(lk["count"], "block"), human(lk["bytes"])))
    else:
        w("Leaks: no summary line was read; %s still allocated at the last event (%s), %s in "
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
    return out


def ranks_text(multi):
    """The cross-rank table of several logs (report.several()), one row per log and device."""
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
