# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/segmap.py: the segment map of the HTML page: a device's segments with their
blocks, each allocated, fenced (freed, its free_completed not yet come) or free, with the
requested size, seq and allocation site of each block.

The segments and blocks are layout.py's Layout, fed by layout.second_pass() up to a line (the
reserved peak, the device's last event); Detail follows, beside it in the same pass, what a
Layout does not keep: which blocks are fenced and where each was allocated. snapshot() joins the
two into the page's JSON, within a budget (MAX_REGIONS drawn, MAX_BLOCKS listed).

Not here: the layout rules (layout.py), the allocation sites' table (sites.py), drawing
(page/report.js).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import bisect

MAX_REGIONS = 300      # regions drawn per map: the largest, shown in address order
MAX_BLOCKS = 30000     # blocks listed per map; regions past it are drawn by their totals
ALLOCATED, FENCED = 0, 1


class Detail:
    """Per block of a device (alloc .. free_completed): (requested bytes, seq, site id); the
    fenced ones (free_requested .. free_completed). free_on_request: a log without
    free_completed, whose blocks leave at free_requested."""

    def __init__(self, free_on_request=False):
        self.free_on_request = free_on_request
        self.info = {}
        self.fenced = set()

    def event(self, action, ptr, size, seq, site):
        if action == "alloc":
            self.info[ptr] = (size, seq, site)
            self.fenced.discard(ptr)
        elif action == "free_requested":
            if self.free_on_request:
                self.info.pop(ptr, None)
            elif ptr in self.info:
                self.fenced.add(ptr)
        elif action == "free_completed":
            self.info.pop(ptr, None)
            self.fenced.discard(ptr)

    def allocated(self, layout):
        """(ptr, block_size, requested, seq, site) of the blocks allocated (not fenced)."""
        info, fenced = self.info, self.fenced
        out = []
        for p, bs in layout.blocks.items():
            if p not in fenced:
                size, seq, site = info.get(p, (bs, None, None))
                out.append((p, bs, size, seq, site))
        return out


def snapshot(layout, detail):
    """The map: every region (segment, or run of mapped pages) with its blocks, in address order,
    as the page's JSON. Addresses are hex strings; a block is [offset in its region, block size,
    state (0 allocated, 1 fenced), requested bytes, seq, site id or -1]; the free ranges are the
    rest. Within the budget: the MAX_REGIONS largest regions, and blocks listed for the first
    regions up to MAX_BLOCKS (the others carry their totals only)."""
    regions = layout.regions()
    blocks = sorted(layout.blocks.items())
    starts = [p for p, _ in blocks]
    info, fenced = detail.info, detail.fenced
    shown = regions
    if len(regions) > MAX_REGIONS:
        shown = sorted(sorted(regions, key=lambda r: (-(r[1] - r[0]), r[0]))[:MAX_REGIONS])
    out = []
    budget = MAX_BLOCKS
    inside = 0
    totals = {"reserved": 0, "allocated": 0, "fenced": 0, "blocks": 0}
    for start, end, seg in regions:
        i = bisect.bisect_left(starts, start)
        j = bisect.bisect_left(starts, end, i)
        inside += j - i
        totals["reserved"] += end - start
        totals["blocks"] += j - i
        for p, bs in blocks[i:j]:
            totals["fenced" if p in fenced else "allocated"] += bs
    for start, end, seg in shown:
        i = bisect.bisect_left(starts, start)
        j = bisect.bisect_left(starts, end, i)
        listed = [] if j - i <= budget else None
        allocated = fenced_bytes = largest = 0
        cursor = start
        for p, bs in blocks[i:j]:
            state = FENCED if p in fenced else ALLOCATED
            if state == FENCED:
                fenced_bytes += bs
            else:
                allocated += bs
            if p > cursor:
                largest = max(largest, p - cursor)
            cursor = max(cursor, p + bs)
            if listed is not None:
                size, seq, site = info.get(p, (bs, None, None))
                listed.append([p - start, bs, state, size, seq, -1 if site is None else site])
        if end > cursor:
            largest = max(largest, end - cursor)
        if listed is not None:
            budget -= len(listed)
        out.append({"at": "0x%x" % start, "segment": "0x%x" % seg, "size": end - start,
                    "allocated": allocated, "fenced": fenced_bytes, "largest_free": largest,
                    "count": j - i, "blocks": listed})
    totals.update({"regions": len(regions), "shown": len(out),
                   "outside": len(blocks) - inside, "region_list": out})
    return totals
