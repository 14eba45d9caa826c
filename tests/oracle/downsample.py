# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/downsample.py: a time series of samples with several values each, cut down
while it streams to at most a fixed number of points, every peak and trough kept exact.

    ds = Downsampler(limit=20000, values=4)
    ds.add(t, (a, b, c, d))       # t in any integer unit, never decreasing
    ds.points()                   # [(t, (a, b, c, d)), ...] in time order, at most `limit`

The time axis is cut into at most (limit - 2) // (2 * values) buckets of equal width; each bucket
keeps, for each value, the sample where it is lowest and the one where it is highest (the first
of equal ones); when a sample falls past the last bucket the width doubles and neighbouring
buckets merge (the lowest of two lows, the highest of two highs). The first and the last sample
are always kept. So the maximum of each value over the points equals its maximum over all
samples, at the time it was first reached. Memory: the buckets, whatever the series' length.

Not here: what the values are (perfetto.py: a device's allocated, reserved, active bytes).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""


class Downsampler:
    def __init__(self, limit, values, width=1000):
        self.k = values
        self.buckets_max = max(1, (limit - 2) // (2 * values))
        self.width = width
        self.t0 = None
        self.buckets = {}     # bucket index -> [low_0, high_0, low_1, high_1, ...] samples
        self.first = None
        self.last = None
        self.n = 0            # samples added (a sample: (t, n, values))

    def add(self, t, values):
        if self.last is not None and t < self.last[0]:
            t = self.last[0]
        p = (t, self.n, values)
        self.n += 1
        if self.t0 is None:
            self.t0 = t
            self.first = p
        self.last = p
        i = (t - self.t0) // self.width
        while i >= self.buckets_max:
            self._coarsen()
            i = (t - self.t0) // self.width
        b = self.buckets.get(i)
        if b is None:
            self.buckets[i] = [p] * (2 * self.k)
            return
        for j in range(self.k):
            x = values[j]
            if x < b[2 * j][2][j]:
                b[2 * j] = p
            elif x > b[2 * j + 1][2][j]:
                b[2 * j + 1] = p

    def _coarsen(self):
        self.width *= 2
        merged = {}
        for i in sorted(self.buckets):
            b = self.buckets[i]
            into = merged.get(i // 2)
            if into is None:
                merged[i // 2] = b
                continue
            for j in range(self.k):   # `into` holds the earlier samples: it wins ties
                if b[2 * j][2][j] < into[2 * j][2][j]:
                    into[2 * j] = b[2 * j]
                if b[2 * j + 1][2][j] > into[2 * j + 1][2][j]:
                    into[2 * j + 1] = b[2 * j + 1]
        self.buckets = merged

    def points(self):
        """The kept samples, (t, values), in the order they were added."""
        kept = {}
        for b in self.buckets.values():
            for p in b:
                kept[p[1]] = p
        for p in (self.first, self.last):
            if p is not None:
                kept[p[1]] = p
        return [(p[0], p[2]) for _, p in sorted(kept.items())]
