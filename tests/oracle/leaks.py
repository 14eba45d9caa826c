# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/leaks.py: the report's leaks: the blocks alive at the end of a log. The
events say which blocks those are (accounting.Device.live: alloc .. free_requested), so they are
what is counted; the summary line's `leaks` (the pool's own list at exit, with symbolized stacks)
is what is listed, each entry checked against the events: one the events never allocated there
or freed before the end, one of another size or seq, one listed twice, one of a device whose
events were skipped, is marked and noted, and counted only as the events have it. Blocks the
summary counts without listing them (`leaks_omitted`, past the 4096 the shim lists) are the
events' blocks alive that it does not list; where the two disagree a note gives both.

leak_report(run, notes) -> the report's "leaks" object, with the blocks alive grouped by site and
size, long-lived or growing (by_site). Not here: the events' accounting
(accounting.py), printing (text.py), grouping by stack (sites.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import json

from cudapool_analysis import vocabulary as v

SHOWN = 5            # disagreeing entries named in a note


def entry(run, dev, ptr, size, block_size, seq, t_ns, tid, bt):
    return {"dev": dev, "ptr": ptr, "size": size, "block_size": block_size, "seq": seq,
            "t_ns": t_ns, "time_s": run.seconds(t_ns), "tid": tid,
            "backtrace": bt if isinstance(bt, list) else []}


def check(run, e, claimed):
    """None when the events agree with a summary's leak entry e, else {"why", "counted" (whether
    the events have a block alive there, counted as they have it), "size", "block_size" (the
    events')}; claimed: the (dev, ptr) of the entries seen so far."""
    dev, ptr = e["dev"], v.hex_value(e["ptr"])
    if type(dev) is not int or ptr is None:
        return {"why": "its device or address is not known", "counted": False}
    if run.reader.devices.skipped(dev):
        return {"why": "the events of its device were skipped", "counted": False}
    d = run.devices.get(dev)
    block = d.live.get(ptr) if d is not None else None
    if block is None:
        return {"why": "no block is alive there at the end of the events (never allocated "
                "there, or freed)", "counted": False}
    if (dev, ptr) in claimed:
        return {"why": "listed twice", "counted": False}
    claimed.add((dev, ptr))
    size, block_size, seq = block[:3]
    theirs = {"counted": True, "size": size, "block_size": block_size}
    if (e["size"], e["block_size"]) != (size, block_size):
        return dict(theirs, why="the events have it with %d bytes requested, a block of %d"
                    % (size, block_size))
    if type(e["seq"]) is int and e["seq"] != seq:
        return dict(theirs, why="the events' block there was allocated at seq %d" % seq)
    return None


GROWING_COUNT = 3       # report.h kGrowingCount
GROUPS_LISTED = 25      # report.h kAliveGroupsListed
KINDS = ("long-lived", "growing", "after the peak")
RULE = ("grouped by allocation site (backtrace) and block size; growing: 3 or more blocks whose "
        "allocations span at least half of the run (a leak's signature); long-lived: allocated by "
        "the device's allocated peak and never freed (weights, optimizer state); after the peak: "
        "neither")


def by_site(run, live):
    """The blocks alive at the end grouped by (device, site, block size), each group's kind:
    growing (GROWING_COUNT or more blocks whose allocations span half the run or more), long-lived
    (every block allocated by the device's allocated peak), else after the peak."""
    groups = {}
    for dev, _, b in live:
        size, block_size, seq, t_ns, _, bt = b[:6]
        key = (dev, json.dumps(bt, separators=(",", ":")) if isinstance(bt, list) else None,
               block_size)
        g = groups.setdefault(key, {"dev": dev, "block_size": block_size, "count": 0, "bytes": 0,
                                    "first_seq": seq, "last_seq": seq, "first_t": t_ns,
                                    "last_t": t_ns,
                                    "backtrace": bt if isinstance(bt, list) else []})
        g["count"] += 1
        g["bytes"] += block_size
        g["first_seq"], g["last_seq"] = min(g["first_seq"], seq), max(g["last_seq"], seq)
        g["first_t"], g["last_t"] = min(g["first_t"], t_ns), max(g["last_t"], t_ns)
    duration = run.last_t - run.first_t if run.first_t is not None else 0
    kinds = {k: {"groups": 0, "blocks": 0, "bytes": 0} for k in KINDS}
    out = []
    for g in groups.values():
        peak = run.devices[g["dev"]].peak_allocated
        if g["count"] >= GROWING_COUNT and duration > 0 and \
                (g["last_t"] - g["first_t"]) * 2 >= duration:
            kind = "growing"
        elif peak is not None and g["last_seq"] <= peak[1]:
            kind = "long-lived"
        else:
            kind = "after the peak"
        kinds[kind]["groups"] += 1
        kinds[kind]["blocks"] += g["count"]
        kinds[kind]["bytes"] += g["bytes"]
        out.append({"dev": g["dev"], "block_size": g["block_size"], "count": g["count"],
                    "bytes": g["bytes"], "kind": kind, "first_seq": g["first_seq"],
                    "last_seq": g["last_seq"], "first_time_s": run.seconds(g["first_t"]),
                    "last_time_s": run.seconds(g["last_t"]), "backtrace": g["backtrace"]})
    out.sort(key=lambda g: (-g["bytes"], g["first_seq"]))
    return {"rule": RULE, "kinds": kinds, "groups": out[:GROUPS_LISTED],
            "groups_listed": min(len(out), GROUPS_LISTED), "group_count": len(out)}


def counted_block_size(e):
    """The block bytes a leak entry (the report's) counts for: its own, the events' where they
    differ, None where the events have no such block (or it is not known)."""
    ev = e.get("events")
    bs = e.get("block_size") if ev is None else ev.get("block_size")
    return bs if type(bs) is int else None


def leak_report(run, notes):
    """The report's leaks: counted from the events, listed from the summary when there is one
    (each entry checked), else from the events. Appends to notes what disagrees."""
    summary = run.reader.summary
    live = [(dev, ptr, block) for dev in sorted(run.devices)
            for ptr, block in run.devices[dev].live.items()]
    out = {"source": "events" if summary is None else "summary",
           "last_seq": run.last_seq if summary is None else None,
           "count": len(live),
           "bytes": sum(b[1] for _, _, b in live),
           "requested_bytes": sum(b[0] for _, _, b in live)}
    if summary is None:
        entries = [entry(run, dev, v.hex_text(ptr), *b) for dev, ptr, b in live]
        entries.sort(key=lambda e: (e["seq"], e["dev"]))
        out.update(entries=entries, listed=len(entries), not_listed=None, omitted=None,
                   disagreements=0, by_site=by_site(run, live))
        return out
    entries, claimed, disagree = [], set(), []
    for l in summary.get("leaks") or []:
        e = entry(run, l.get("dev"), l.get("ptr"), l.get("size"), l.get("block_size"),
                  l.get("seq"), l.get("t_ns"), l.get("tid"), l.get("backtrace"))
        e["events"] = check(run, e, claimed)
        if e["events"] is not None:
            disagree.append(e)
        entries.append(e)
    # The writer lists them in the pool's order: oldest first reads better.
    entries.sort(key=lambda e: (e["seq"] if type(e["seq"]) is int else -1,
                                e["dev"] if type(e["dev"]) is int else -1))
    rest = [b for dev, ptr, b in live if (dev, ptr) not in claimed]
    not_listed = {"count": len(rest), "size": sum(b[0] for b in rest),
                  "block_size": sum(b[1] for b in rest)}
    omitted = summary.get("leaks_omitted")
    if omitted is not None:
        omitted = {k: omitted[k] for k, _ in v.LEAKS_OMITTED_FIELDS}
    out.update(entries=entries, listed=len(entries), not_listed=not_listed,
               omitted=omitted,
               disagreements=len(disagree), by_site=by_site(run, live))
    if disagree:
        notes.append("the summary lists %d leak(s) that the events do not have as listed (%s%s): "
                     "each is counted as the events have it, or not at all"
                     % (len(disagree), "; ".join(
                         "dev %s ptr %s, %s bytes: %s" % tuple(
                             "?" if x is None else x for x in (e["dev"], e["ptr"], e["block_size"],
                                                               e["events"]["why"]))
                         for e in disagree[:SHOWN]), "; ..." if len(disagree) > SHOWN else ""))
    if omitted is not None and omitted != not_listed:
        notes.append("the summary counts %d blocks alive at exit that it does not list (%d bytes "
                     "requested, %d in blocks); the events have %d such blocks (%d bytes "
                     "requested, %d in blocks): the events' are counted"
                     % (omitted["count"], omitted["size"], omitted["block_size"],
                        not_listed["count"], not_listed["size"], not_listed["block_size"]))
    elif omitted is None and rest:
        notes.append("the events have %d block(s) alive at exit (%d bytes in blocks) that the "
                     "summary's leaks do not list: counted" % (len(rest), not_listed["block_size"]))
    return out
