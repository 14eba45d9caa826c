# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/held_pass.py: the bytes held over time (issue 31; docs/report.md, "Held over time"),
the report's "held" objects, computed the plain way: the first pass records every change of a
device's allocated and reserved bytes with its time (Changes.after), and the figures are
integrated at the end from that whole list, each figure held from the change that set it to the
next one, the last until the log's last event; the time above a level is summed over the pieces
above it. The clock never runs back: an event stamped before one ahead of it counts at that one's
time. Memory grows with the changes (a test oracle's right; the engine's tools/analyze/held.h keeps
bounded tables instead), and nothing here shares the engine's reasoning but the rules:
a mean is rounded to the nearest byte (a half up), a share to 6 decimals, the level of a fraction
f of the peak is floor(peak * f) and "above" is strictly above; bytes x ns past what 128 bits hold
(a log whose figures are impossible) leave that mean out.

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

INT128 = 1 << 127
DEFAULT_LEVEL = "0.5"


class Changes:
    """first_pass()'s record of the bytes held: after every event, each device whose allocated or
    reserved bytes changed, at the clock (the latest t_ns so far)."""

    def __init__(self):
        self.clock = None
        self.first = None
        self.now = {}        # dev -> (allocated, reserved)
        self.list = []       # (clock, dev, allocated, reserved, seq, t_ns)

    def after(self, d, t_ns, seq):
        if self.clock is None:
            self.clock = self.first = t_ns
        self.clock = max(self.clock, t_ns)
        now = (d.allocated_bytes[0], d.reserved_bytes[0])
        if self.now.get(d.dev, (0, 0)) != now:
            self.now[d.dev] = now
            self.list.append((self.clock, d.dev, now[0], now[1], seq, t_ns))


def parse_level(text):
    """("of_peak", Fraction) for a fraction with a decimal point from 0 to 1, else ("bytes", n)
    for a size (the package's held.parse_level says which forms)."""
    from cudapool_analysis.held import parse_level as shipped
    return shipped(text)


def series(changes, index, dev):
    """[(t, value)] of one figure (index 0: allocated, 1: reserved) of device dev (None: all
    devices summed): 0 from the log's first event, then each change of it."""
    out = [(changes.first, 0)]
    now = {}
    for t, d, a, r, _, _ in changes.list:
        now[d] = (a, r)
        if dev is None:
            v = sum(x[index] for x in now.values())
        elif d == dev:
            v = now[d][index]
        else:
            continue
        if v != out[-1][1]:
            out.append((t, v))
    return out


def pieces(points, end):
    """[(value, ns)] of a series held until end."""
    return [(v, (points[i + 1][0] if i + 1 < len(points) else end) - t)
            for i, (t, v) in enumerate(points)]


def area(parts):
    """The sum of value x ns, or None when a product or a partial sum leaves 128 bits."""
    total = 0
    for v, ns in parts:
        if v == 0 or ns == 0:
            continue
        p = v * ns
        if not -INT128 <= p < INT128:
            return None
        total += p
        if not -INT128 <= total < INT128:
            return None
    return total


def mean(a, span):
    q, r = divmod(a, span)
    return q + (1 if 2 * r >= span else 0)


def level_bytes(level, peak):
    kind, x = level
    if kind == "bytes":
        return x
    return peak * x.numerator // x.denominator if peak > 0 else 0


def part(changes, dev, level, peak_reserved, allocated):
    """The "held" figures of one device (dev None: all devices together)."""
    span = changes.clock - changes.first if changes.first is not None else None
    out = {"allocated": None, "reserved": None}
    over = []
    if allocated:
        parts = pieces(series(changes, 0, dev), changes.clock)
        a = area(parts)
        if a is None:
            over.append("allocated")
        out["allocated"] = {"mean": mean(a, span) if span and a is not None else None}
    if peak_reserved is not None:
        parts = pieces(series(changes, 1, dev), changes.clock)
        a = area(parts)
        if a is None:
            over.append("reserved")
        lv = level_bytes(level, peak_reserved)
        above = sum(ns for v, ns in parts if v > lv) if span else None
        out["reserved"] = {"mean": mean(a, span) if span and a is not None else None,
                           "level": lv, "above_ns": above,
                           "above_s": above / 1e9 if span else None,
                           "share": round(above / span, 6) if span else None,
                           "unsure_ns": 0}
    return out, over


def peak_of_sum(changes):
    """(bytes, seq, t_ns) where the reserved bytes of all devices together first peaked."""
    best, now = None, {}
    for _, dev, _, r, seq, t_ns in changes.list:
        now[dev] = r
        s = sum(now.values())
        if s > 0 and (best is None or s > best[0]):
            best = (s, seq, t_ns)
    return best


def whole(changes, level_text, devices):
    """The report's "held" object of the log: the span, the level, the peak of the summed
    reserved bytes, and the figures of all devices together."""
    level = parse_level(level_text)
    kind, x = level
    peak = peak_of_sum(changes) if changes.first is not None else None
    h = {"from_t_ns": changes.first, "to_t_ns": changes.clock,
         "span_s": (changes.clock - changes.first) / 1e9 if changes.first is not None else None,
         "level": {"given": level_text, "of_peak": float(level_text) if kind == "of_peak" else None,
                   "bytes": x if kind == "bytes" else None},
         "peak_reserved": None if peak is None else {
             "bytes": peak[0], "seq": peak[1], "t_ns": peak[2],
             "time_s": (peak[2] - changes.first) / 1e9}}
    allocated = any(dr["peak_allocated"] is not None for dr in devices.values())
    figures, over = part(changes, None, level, None if peak is None else peak[0], allocated) \
        if changes.first is not None else ({"allocated": None, "reserved": None}, [])
    h.update(figures)
    return h, over


def of_device(changes, dev, level_text, dr):
    """A device's "held" object, from its report's peaks (dr)."""
    if changes.first is None:
        return {"allocated": None, "reserved": None}, []
    peak = dr["peak_reserved"]
    return part(changes, dev, parse_level(level_text), None if peak is None else peak["bytes"],
                dr["peak_allocated"] is not None)


def overflow_notes(where, over):
    return ["%s: the mean of its %s bytes over time is left out: bytes x time reached 2**127 "
            "(the log is inconsistent)" % (where, what) for what in over]


