# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/verdict.py: the answer first. One log's verdict, per device, in the words a
PyTorch user knows (nvidia-smi, memory_allocated, memory_reserved, empty_cache, the CUDA context):

  - the peak: what the pool held from the driver at its reserved peak, which is what nvidia-smi
    showed then less the CUDA context (the log does not record the context's own memory);
  - the most the program held at once (torch.cuda.max_memory_allocated()), and the part of the
    peak that was cache the program never used at the same time (peak reserved - peak allocated);
  - at the peak, the cache that was not in use: free (in how many regions, the largest free
    block) and fenced ("waiting for work on another stream"), beside the largest requests;
  - the setting that would have reserved least and its saving, from cudapool tune (predicted by
    replaying the log), with the string to paste;
  - memory held over time: the idle release tune chose (cudapool's own keys: cache unused that
    long goes back), what the pool would have held on average with and without it and what
    mapping memory again would cost; else the most it would save and why tune does not
    recommend it (nothing when tune did not try it);
  - at the end, what stayed cached and what torch.cuda.empty_cache() would have given back;
  - the allocation sites that held the most bytes at the peak of allocated, Python lines first.

    verdict(report, page, tune, index) -> {"source", "devices": {dev: figures}, "setting",
                                           "held_over_time", "lines": [{"what", "text"}, ...]}

Every figure comes from the engine's report and page objects (`cudapool report --json`'s object,
the page's data) and tune's JSON: nothing is computed here that they do not hold, except sums and
differences of theirs (docs/report.md "The verdict" says which). The page (page/report.js) shows
these lines and figures first; tests/cli/verdict_agree.sh checks that the page's figures equal
`report --json`'s. Also here: whether tune runs by default (auto_tune_why_not).

Not here: the figures themselves (the engine), printing the rest (text.py, page/report.js).
"""

import os
import stat

from . import vocabulary as v
from .text import short

AUTO_TUNE_EVENTS = 2_000_000   # tune runs by default up to this many events in all (~10 s)
TOP_SITES = 5                  # sites the verdict names
TOP_REQUESTS = 3               # request sizes it names


def auto_tune_why_not(paths, events):
    """None when cudapool tune runs by default on the logs at paths (events in all, from the
    engine), else why not, in a few words."""
    for p in paths:
        try:
            if p == "-" or not stat.S_ISREG(os.stat(p).st_mode):
                return "a log is not a regular file (read once)"
        except OSError:
            return "a log cannot be read again"
    if events > AUTO_TUNE_EVENTS:
        return "%d events, more than %d: run `cudapool tune LOG` or pass --tune" % (
            events, AUTO_TUNE_EVENTS)
    return None


def size(n):
    """A byte count in the verdict's words: text.short()'s (512 B, 1.50 GiB, "impossible"), "?"
    for none."""
    return short(n) if type(n) is int else "?"


def secs(t):
    return "?" if t is None else "%.3g s" % t if t < 100 else "%.0f s" % t


def _sites(page, dev):
    """The sites holding the most bytes at the peak of allocated (the page's order: Python sites
    first), each {"where", "bytes", "blocks", "python"}."""
    if not page:
        return []
    held = ((page.get("devices") or {}).get(dev) or {}).get("sites_at_peak") or []
    s = page.get("sites") or {}
    frames, focus, python = s.get("frames") or [], s.get("focus") or [], s.get("python") or []
    out, by_where = [], {}
    for h in held:        # one user line reached through two library paths: one entry
        i = h.get("site", -1)
        where = "(no stack recorded)"
        if 0 <= i < len(frames) and frames[i]:
            f = focus[i] if i < len(focus) and 0 <= focus[i] < len(frames[i]) else 0
            where = frames[i][f]
        e = by_where.get(where)
        if e is None:
            e = by_where[where] = {"where": where, "bytes": 0, "blocks": 0,
                                   "python": bool(0 <= i < len(python) and python[i])}
            out.append(e)
        e["bytes"] += h.get("bytes") or 0
        e["blocks"] += h.get("count") or 0
    out.sort(key=lambda e: (not e["python"], -e["bytes"]))
    return out[:TOP_SITES]


def _returnable(m):
    """What torch.cuda.empty_cache() gives back from a segment map (the page's maps.exit): the
    regions with nothing allocated (fenced blocks are freed first: empty_cache synchronizes);
    None without a map or when the map does not list every region."""
    if not m or m.get("shown") != m.get("regions"):
        return None
    return sum(r["size"] for r in m.get("region_list") or [] if r.get("allocated") == 0)


def _requests(report, dev):
    by = {}
    for r in report.get("largest_requests") or []:
        if str(r.get("dev")) != dev:
            continue
        e = by.setdefault(r["size"], {"size": r["size"], "count": 0, "first_time_s": r.get("time_s")})
        e["count"] += 1
    return sorted(by.values(), key=lambda e: -e["size"])[:TOP_REQUESTS]


def _device(report, page, dev, replayed):
    src = (report.get("replay") or {}).get("devices", {}) if replayed else report["devices"]
    d = src.get(dev) or {}
    pdev = (page or {}).get("devices", {}).get(dev) or {}
    if replayed:
        pdev = ((page or {}).get("replay") or {}).get("devices", {}).get(dev) or pdev
    pr, pa, fr = d.get("peak_reserved"), d.get("peak_allocated"), d.get("fragmentation")
    stats = d.get("stats") or {}
    reserved, allocated = pr["bytes"] if pr else None, pa["bytes"] if pa else None
    out = {"peak_reserved": reserved, "peak_time_s": pr.get("time_s") if pr else None,
           "peak_allocated": allocated,
           "never_used": reserved - allocated
           if type(reserved) is int and type(allocated) is int else None,
           "at_peak": {k: fr.get(k) for k in ("allocated", "fenced", "free_cached",
                                              "largest_free_block", "regions", "fragmentation",
                                              "set_by", "before", "request")}
           if fr else None,
           "requests": _requests(report, dev),
           "exit": {"reserved": stats.get("reserved_bytes.all.current"),
                    "allocated": stats.get("allocated_bytes.all.current"),
                    "empty_cache_returns": _returnable((pdev.get("maps") or {}).get("exit"))},
           "sites": _sites(page, dev)}
    return out


def _setting(tune, index):
    """tune's best setting for this log (its rank-1 row), or why there is none."""
    if tune is None:
        return {"not_run": "cudapool tune was not run"}
    if "error" in tune:
        return {"not_run": tune["error"]}
    if "skipped" in tune:
        return {"not_run": tune["skipped"]}
    logs = tune.get("logs") or []
    rec = tune.get("recommendation") or {}
    rows = (logs[index].get("results") or []) if index < len(logs) else []
    best = next((r for r in rows if r.get("rank") == 1), None)
    if best is None or rec.get("keep_own") or best.get("vs_own") is None or best["vs_own"] >= 0:
        return {"keep_own": True, "why": rec.get("why")}
    own = round(best["peak_reserved"] / (1 + best["vs_own"]))
    return {"setting": best["setting"], "pytorch_conf": best.get("conf"),
            "cudapool_conf": best.get("conf"), "peak_reserved": best["peak_reserved"],
            "own_peak_reserved": own, "saving": own - best["peak_reserved"],
            "saving_fraction": -best["vs_own"], "caveats": rec.get("caveats") or []}


def _held_over_time(tune):
    """tune's idle-release study (its held_over_time and recommendation, docs/tune.md "Held over
    time"): the variant it chose, else the one that would have held least on average and why tune
    does not recommend it, each with its figures as tune gives them (the worst log's with several
    logs); None when tune did not run or did not try idle release (its not_tried says why)."""
    h = (tune or {}).get("held_over_time") or {}
    rows = h.get("rows") or []
    if not h.get("tried") or not rows:
        return None
    label = h.get("chosen") or h.get("most_saving")
    row = next((r for r in rows if r.get("setting") == label), None)
    if row is None:
        return None
    none = rows[0]
    out = {"setting": row["setting"], "chosen": label == h.get("chosen"),
           "cudapool_conf": row.get("conf"), "logs": len(tune.get("logs") or []) or 1}
    if out["chosen"]:
        out["cudapool_conf"] = (tune.get("recommendation") or {}).get("cudapool_conf") or row.get("conf")
    for k in ("idle_release_ms", "idle_release_floor_mb", "expandable_handle_mb", "peak_reserved",
              "mapped_again", "cost_s", "cost_share"):
        out[k] = row.get(k)
    out["mean_reserved"], out["without_mean_reserved"] = row["mean_reserved"], none["mean_reserved"]
    out["saving"] = none["mean_reserved"] - row["mean_reserved"]
    out["saving_fraction"] = -row["vs_without"]
    out["without_peak_reserved"] = none.get("peak_reserved")
    for k in ("cost_budget", "min_saving", "peak_tolerance"):
        out[k] = h.get(k)
    if not out["chosen"]:
        out["why_not"] = [w for w, no in (
            ("saving", out["saving_fraction"] < h.get("min_saving", 0)),
            ("cost", out["cost_share"] > h.get("cost_budget", 1)),
            ("peak", (out["peak_reserved"] or 0) >
             (out["without_peak_reserved"] or 0) * (1 + h.get("peak_tolerance", 0)))) if no]
    return out


def verdict(report, page, tune, index=0):
    """One log's verdict (the module's docstring): report, `cudapool report --json`'s object of
    the log; page, its page object (the engine's), or None; tune, `cudapool tune --json` of the
    logs (index: this log's place there), {"error"|"skipped": why}, or None."""
    replayed = bool(report.get("ending", {}).get("requests_only")) and report.get("replay")
    devs = sorted((report.get("replay") or {}).get("devices", {}) if replayed
                  else report.get("devices") or {}, key=int)
    out = {"source": "replay" if replayed else "log",
           "devices": {dev: _device(report, page, dev, replayed) for dev in devs},
           "setting": _setting(tune, index), "held_over_time": _held_over_time(tune)}
    out["lines"] = lines(out, report)
    return out


def _why(a):
    """Why the cache reached its peak: the request that came next and the free blocks it found
    (the engine's fragmentation object: before, set_by, request), else the free and fenced bytes
    when the peak was reached."""
    fenced = ("; %s more waited for work on another stream (fenced)" % size(a["fenced"])
              if a["fenced"] else "")
    before, req, new = a.get("before") or {}, a.get("request"), a.get("set_by") or {}
    how = ("mapped %s more pages" if new.get("action") == "segment_map"
           else "reserved a new segment of %s") % size(new.get("size"))
    if req and before.get("free_cached") is not None:
        if req["block_size"] > before["largest_free_block"]:
            return ("The peak came when a request of %s found no free block large enough: the cache "
                    "then held %s free, the largest free block %s, so the pool %s%s."
                    % (size(req["size"]), size(before["free_cached"]),
                       size(before["largest_free_block"]), how, fenced))
        return ("The peak came with a request of %s although the cache held a free block of %s "
                "(of another stream, or of the other pool: blocks of 1 MiB and less are kept apart "
                "from larger ones); %s free in all, so the pool %s%s."
                % (size(req["size"]), size(before["largest_free_block"]),
                   size(before["free_cached"]), how, fenced))
    return ("When the pool reached its peak, %s of it was free in %s region%s (the largest free "
            "block %s, fragmentation %s)%s."
            % (size(a["free_cached"]), a["regions"], "" if a["regions"] == 1 else "s",
               size(a["largest_free_block"]),
               "?" if a["fragmentation"] is None else "%.2f" % a["fragmentation"], fenced))


def _mean(x):
    """A mean of bytes (tune's, a float) in the verdict's words."""
    return size(int(round(x))) if isinstance(x, (int, float)) and x == x else "?"


def _share(x):
    """A share of the run (tune's cost_share, 0.0005) as a percent: 0.05, 1.2, 12.3."""
    p = 100 * x
    return "%.1f" % p if p >= 1 else "%.2g" % p


def _held_line(h):
    """The held_over_time line: what idle release would have held on average."""
    replayed = ("this log" if h["logs"] == 1
                else "the %d logs (the worst log's figures)" % h["logs"])
    keys = "CUDAPOOL_CONF=%s" % h["cudapool_conf"]
    cost = ("nothing would be mapped again" if not h["mapped_again"] and not h["cost_s"]
            else "mapping memory again would cost about %s (%s%% of the run)"
            % (secs(h["cost_s"]), _share(h["cost_share"])))
    if h["chosen"]:
        how = "the shim gives back cache unused for %d ms" % h["idle_release_ms"]
        if h["idle_release_floor_mb"]:
            how += ", keeping %d MiB" % h["idle_release_floor_mb"]
        if h["expandable_handle_mb"]:
            how += ", in driver allocations of up to %d MiB" % h["expandable_handle_mb"]
        return ("Memory held over time: with %s (idle release, cudapool's own keys: %s), the pool "
                "would have held %s on average instead of %s without idle release (%.1f%% less), "
                "predicted by replaying %s; %s."
                % (keys, how, _mean(h["mean_reserved"]), _mean(h["without_mean_reserved"]),
                   100 * h["saving_fraction"], replayed, cost))
    if h["saving_fraction"] <= 0:
        return ("Memory held over time: idle release (cudapool's own keys) would not have held "
                "less on average at any delay cudapool tune tried.")
    why = []
    if "saving" in h["why_not"]:
        why.append("it saves less than the %g%% tune asks" % (100 * h["min_saving"]))
    if "cost" in h["why_not"]:
        why.append("mapping memory again would cost about %s, %s%% of the run, more than the "
                   "%g%% tune allows (`cudapool tune --idle-cost PCT` allows PCT%% of the run)"
                   % (secs(h["cost_s"]), _share(h["cost_share"]), 100 * h["cost_budget"]))
    if "peak" in h["why_not"]:
        why.append("its peak would be %s instead of %s" % (size(h["peak_reserved"]),
                                                          size(h["without_peak_reserved"])))
    return ("Memory held over time: idle release (cudapool's own keys) would save at most %s on "
            "average: with %s the pool would have held %s instead of %s without idle release (%.1f%% "
            "less), predicted by replaying %s; tune does not recommend it: %s."
            % (_mean(h["saving"]), keys, _mean(h["mean_reserved"]),
               _mean(h["without_mean_reserved"]), 100 * h["saving_fraction"], replayed,
               "; ".join(why) or "see `cudapool tune`"))


def lines(vd, report):
    """The verdict in words, most important first: [{"what", "text"}], what one of replay, peak,
    held, why, requests, setting, held_over_time, exit, sites (the page shows the sites as a
    table instead)."""
    out = []

    def w(text, what):
        out.append({"what": what, "text": text})
    if vd["source"] == "replay":
        w("This log holds requests only (no segments): the figures below are the pool's as "
          "replayed under the log's own settings.", "replay")
    several = len(vd["devices"]) > 1
    for dev, d in vd["devices"].items():
        on = " on device %s" % dev if several else ""
        if d["peak_reserved"] is None:
            w("Device %s: no memory was reserved." % dev, "peak")
            continue
        w("At its peak%s (%s into the run) the pool held %s from the driver: what nvidia-smi "
          "showed then, less the CUDA context (not in the log: about 0.6 GiB on an H200)."
          % (on, secs(d["peak_time_s"]), size(d["peak_reserved"])), "peak")
        if d["peak_allocated"] is not None:
            sane = all(type(x) is int and v.fits(x, v.UINT)
                       for x in (d["never_used"], d["peak_reserved"]))
            share = (" (%.0f%%)" % (100 * d["never_used"] / d["peak_reserved"])
                     if sane and d["peak_reserved"] else "")
            w("The program itself held at most %s at once (torch.cuda.max_memory_allocated()): "
              "%s%s of the peak was cache it never used at the same time."
              % (size(d["peak_allocated"]), size(d["never_used"]), share), "held")
        a = d["at_peak"]
        if a and a.get("free_cached") is not None:
            w(_why(a), "why")
        if d["requests"]:
            w("A free block serves only a request that fits in it; the largest requests were %s."
              % ", ".join("%s (asked %d time%s, first at %s)" % (size(r["size"]), r["count"],
                                                          "" if r["count"] == 1 else "s",
                                                          secs(r["first_time_s"]))
                          for r in d["requests"]), "requests")
    s = vd["setting"]
    if "setting" in s:
        w("Setting that would have reserved least: PYTORCH_CUDA_ALLOC_CONF=%s (or CUDAPOOL_CONF "
          "under the shim): peak %s instead of %s, %s less (%.1f%%), predicted by replaying this "
          "log (cudapool tune); check it with one real run."
          % (s["pytorch_conf"], size(s["peak_reserved"]), size(s["own_peak_reserved"]),
             size(s["saving"]), 100 * s["saving_fraction"]), "setting")
    elif s.get("keep_own"):
        w("No setting cudapool tune tried would have reserved less: keep the log's own "
          "settings.", "setting")
    else:
        w("Settings: not tried (%s)." % s["not_run"], "setting")
    h = vd.get("held_over_time")
    if h:
        w(_held_line(h), "held_over_time")
    for dev, d in vd["devices"].items():
        e = d["exit"]
        if e["reserved"] is not None:
            back = e["empty_cache_returns"]
            w("At the end%s the pool still held %s, %s of it in use%s." % (
                " on device %s" % dev if several else "", size(e["reserved"]),
                size(e["allocated"]), "" if back is None else
                ": torch.cuda.empty_cache() (or `cudapool empty-cache PID`) would have given "
                "back %s" % size(back)), "exit")
        if d["sites"]:
            w("Held most at the peak of allocated%s: %s." % (
                " on device %s" % dev if several else "",
                "; ".join("%s %s (%d block%s)" % (x["where"], size(x["bytes"]), x["blocks"],
                                                  "" if x["blocks"] == 1 else "s")
                          for x in d["sites"])), "sites")
    return out
