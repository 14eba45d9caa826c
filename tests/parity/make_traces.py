#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_traces.py: writes the parity traces and the case list.

    python3 tests/parity/make_traces.py [--out-dir DIR] [--if-missing] [--list]

Writes DIR/traces/<trace>.jsonl (cudapool.log/1 allocation logs) and DIR/cases.json (DIR defaults to
this script's directory). Python 3 standard library only; every trace comes from a fixed seed, so
the output is byte-for-byte reproducible and is committed.

A case is {name, trace, conf, fraction}: the trace is replayed once through PyTorch's own
CUDACachingAllocator (torch_replay.py, with PYTORCH_CUDA_ALLOC_CONF=conf and
torch.cuda.set_per_process_memory_fraction(fraction)) and once through `cudapool replay`; see
docs/parity.md.

Sizing rules the traces keep:
  * without a fraction, reserved memory stays far below 40 GiB (the GPU has ~140 GiB);
  * with a fraction, the cap is int(fraction * total_memory) of the card the run happens on. The
    traces do not know that number, so they are sized for any total between 120 GiB and 160 GiB:
    the OOM phases ask for more live memory than the largest possible cap (so they fail on any
    such card), and the recovery phases need less than the smallest possible cap.
"""

import argparse
import json
import os
import random
import sys

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

SCHEMA = "cudapool.log/1"
# Nominal total written in the headers; both replays are told the real card's total instead.
HEADER_TOTAL_MEMORY = 150_000_000_000
# The range of device totals the fraction cases are designed for (see the module docstring).
TOTAL_MIN = 120 * GiB
TOTAL_MAX = 160 * GiB


def cudapool_conf(conf, fraction):
    """The conf string cudapool gets: the case conf plus per_process_memory_fraction when set.

    run_parity.py builds the same string (keep the two in step)."""
    if fraction is None:
        return conf
    extra = "per_process_memory_fraction:" + repr(float(fraction))
    return conf + "," + extra if conf else extra


class Trace:
    """Builds one single-stream allocation log."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = random.Random(seed)
        self.events = []  # (action, id, size)
        self.live = {}  # id -> requested size
        self.live_bytes = 0
        self._next_id = 1
        self._free_ids = []  # ids whose allocation was freed; reused like real pointers

    def _new_id(self):
        # Real allocators hand the same address out again soon after a free; reuse ids the
        # same way about half of the time (most recently freed first).
        if self._free_ids and self.rng.random() < 0.5:
            return self._free_ids.pop()
        i = self._next_id
        self._next_id += 1
        return i

    def alloc(self, size):
        size = int(size)
        if size <= 0:
            raise ValueError("%s: allocation of %d bytes" % (self.name, size))
        i = self._new_id()
        assert i not in self.live
        self.live[i] = size
        self.live_bytes += size
        self.events.append(("alloc", i, size))
        return i

    def free(self, i):
        size = self.live.pop(i)
        self.live_bytes -= size
        self.events.append(("free_requested", i, size))
        self._free_ids.append(i)

    def free_many(self, ids):
        for i in ids:
            if i in self.live:
                self.free(i)

    def free_all(self, shuffle=True):
        ids = list(self.live)
        if shuffle:
            self.rng.shuffle(ids)
        self.free_many(ids)

    def free_random(self, fraction=None, count=None):
        ids = sorted(self.live)
        self.rng.shuffle(ids)
        if count is None:
            count = int(len(ids) * fraction)
        self.free_many(ids[:count])

    def empty_cache(self):
        self.events.append(("empty_cache", 0, 0))

    def lines(self, header_conf):
        header = {
            "schema": SCHEMA,
            "version": "0.1.0",
            "pid": 1,
            "host": "parity",
            "executable": "make_traces.py",
            "conf": header_conf,
            "devices": [{"id": 0, "name": "synthetic", "total_memory": HEADER_TOTAL_MEMORY}],
        }
        out = [json.dumps(header, separators=(",", ":"))]
        t = 1_000_000_000
        trng = random.Random(self.name)  # timestamps only; independent of the size stream
        for seq, (action, i, size) in enumerate(self.events, start=1):
            t += trng.randint(200, 5000)
            ev = {
                "seq": seq,
                "t_ns": t,
                "tid": 1,
                "dev": 0,
                "action": action,
                "ptr": "0x%x" % i,
                "size": size,
            }
            out.append(json.dumps(ev, separators=(",", ":")))
        return out


# ---------------------------------------------------------------------------------------------
# Size helpers


def log_uniform(rng, lo, hi):
    """An integer in [lo, hi], log-uniformly distributed."""
    import math

    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def churn(tr, steps, pick_size, live_lo, live_hi, bytes_hi=None, lifo=0.5):
    """Random allocate/free steps keeping between live_lo and live_hi allocations alive.

    Frees prefer recent allocations (lifo) like a real program's temporaries; the rest die at
    random. bytes_hi bounds the live requested bytes."""
    rng = tr.rng
    order = []  # allocation order of live ids, for the LIFO bias
    for _ in range(steps):
        order = [i for i in order if i in tr.live] if len(order) > 4 * len(tr.live) + 64 else order
        n = len(tr.live)
        want_alloc = n < live_lo or (n < live_hi and rng.random() < 0.5)
        size = pick_size(rng) if want_alloc else 0
        if want_alloc and bytes_hi is not None and tr.live_bytes + size > bytes_hi and n > 0:
            want_alloc = False
        if want_alloc:
            order.append(tr.alloc(size))
            continue
        if not tr.live:
            continue
        if rng.random() < lifo:
            while order and order[-1] not in tr.live:
                order.pop()
            victim = order.pop() if order else rng.choice(sorted(tr.live))
        else:
            victim = rng.choice(sorted(tr.live))
        tr.free(victim)


def mix(*weighted):
    """pick_size from (weight, fn) pairs."""
    total = float(sum(w for w, _ in weighted))

    def pick(rng):
        x = rng.random() * total
        for w, fn in weighted:
            x -= w
            if x <= 0:
                return fn(rng)
        return weighted[-1][1](rng)

    return pick


def lu(lo, hi):
    return lambda rng: log_uniform(rng, lo, hi)


def jitter(rng):
    """A random offset below 1 MiB that lands on a random 512-byte rounding step."""
    return 512 * rng.randint(0, 2047) + rng.randint(1, 511)


def choice(values):
    values = list(values)
    return lambda rng: rng.choice(values)


# Sizes on and next to the small-pool rounding and pool boundaries.
SMALL_EDGES = [
    1, 2, 255, 511, 512, 513, 1000, 1023, 1024, 1025, 1536, 2047, 2048, 2049, 4095, 4096, 4097,
    8191, 8193, 65535, 65536, 65537, 131073, 262143, 262144, 262145, 524287, 524288, 524289,
    786432, 1048063, 1048064, 1048065, 1048575, 1048576, 1048577,
]
# 1-10 MiB requests (20 MiB segments) and their edges.
MID_EDGES = [
    MiB + 1, MiB + 512, MiB + 513, 2 * MiB - 1, 2 * MiB, 2 * MiB + 1, 4 * MiB + 512 * KiB,
    5 * MiB, 9 * MiB + 512 * KiB, 10 * MiB - 513, 10 * MiB - 512, 10 * MiB - 1, 10 * MiB,
    10 * MiB + 1, 19 * MiB, 19 * MiB - 1, 18 * MiB + 512 * KiB, 18 * MiB + 1,
]
# > 10 MiB requests (2 MiB rounding of the segment) and their edges.
LARGE_EDGES = [
    10 * MiB + 1, 12 * MiB - 1, 12 * MiB, 12 * MiB + 1, 14 * MiB - 512, 20 * MiB - 1, 20 * MiB,
    20 * MiB + 1, 21 * MiB + 1, 22 * MiB, 33 * MiB, 64 * MiB, 100 * MiB + 3, 256 * MiB - 512,
    256 * MiB + 512, 512 * MiB + 1, GiB - 1, GiB, GiB + 1,
]


# ---------------------------------------------------------------------------------------------
# Traces. Each builder returns a Trace; names are the file names.


def t_small_pool():
    """Small pool: <= 1 MiB requests, 512 B rounding, 2 MiB segments, splitting and merging."""
    tr = Trace("small_pool", 101)
    rng = tr.rng
    # Edges: three of each boundary size, freed in a shuffled order, twice over.
    for _ in range(2):
        for s in SMALL_EDGES:
            for _ in range(3):
                tr.alloc(s)
        tr.free_all()
    # A pinned block per few segments keeps segments split (inactive_split) while others merge.
    pins = [tr.alloc(rng.choice([512, 4096, 65536, 300000])) for _ in range(40)]
    small = mix(
        (50, lu(1, 4096)),
        (30, lu(4096, 131072)),
        (15, lu(131072, MiB)),
        (5, choice(SMALL_EDGES[:-1])),
    )
    churn(tr, 1400, small, 100, 900)
    tr.empty_cache()  # releases only the segments that are whole again
    churn(tr, 1400, small, 300, 1400, lifo=0.3)
    tr.free_many(pins[::2])
    tr.empty_cache()
    churn(tr, 1200, small, 50, 600, lifo=0.8)
    tr.free_random(0.8)
    tr.empty_cache()
    churn(tr, 300, small, 20, 200)
    return tr


def t_mid_pool():
    """1-10 MiB requests carved from 20 MiB segments; >10 MiB edges next to them."""
    tr = Trace("mid_pool", 102)
    for s in MID_EDGES:
        tr.alloc(s)
        tr.alloc(s)
    tr.free_all()
    mid = mix(
        (80, lu(MiB + 1, 10 * MiB)),
        (12, lu(512, MiB)),
        (8, lu(10 * MiB, 24 * MiB)),
    )
    churn(tr, 1300, mid, 40, 220)
    tr.empty_cache()
    churn(tr, 1300, mid, 100, 300, lifo=0.2)
    tr.free_random(0.7)
    churn(tr, 600, mid, 20, 150, lifo=0.8)
    return tr


def t_large_pool():
    """> 10 MiB requests: segments rounded to 2 MiB, best-fit reuse and splitting."""
    tr = Trace("large_pool", 103)
    for s in LARGE_EDGES:
        tr.alloc(s)
    tr.free_all()
    large = mix(
        (60, lu(10 * MiB + 1, 256 * MiB)),
        (25, lu(256 * MiB, GiB)),
        (10, choice(LARGE_EDGES)),
        (5, lu(1 * GiB, 3 * GiB)),
    )
    churn(tr, 1200, large, 10, 60, bytes_hi=6 * GiB)
    tr.empty_cache()
    churn(tr, 1200, large, 10, 80, bytes_hi=8 * GiB, lifo=0.2)
    tr.free_random(0.6)
    churn(tr, 800, large, 5, 40, bytes_hi=5 * GiB, lifo=0.8)
    return tr


def t_best_fit():
    """Best fit among cached blocks of distinct sizes.

    Sizes are chosen so that no two free blocks in different segments have the same size when a
    request could take either: with equal sizes, PyTorch picks the lower device address, which a
    simulated device need not reproduce (docs/parity.md, known limits)."""
    tr = Trace("best_fit", 104)
    rng = tr.rng
    # Large pool: cached whole segments of distinct sizes, 4 MiB apart.
    for rnd in range(8):
        blocks = [(30 + 4 * k) * MiB + rnd * 2 * MiB for k in range(31)]
        order = list(blocks)
        rng.shuffle(order)
        ids = [tr.alloc(s) for s in order]
        tr.free_many(ids)
        # Each request fits one block best; the remainders (when split) differ from each other.
        reqs = []
        for k in range(0, 30, 2):
            b = blocks[k]
            kind = (k // 2 + rnd) % 5
            if kind == 0:
                reqs.append(b)  # exact fit
            elif kind == 1:
                reqs.append(b - MiB)  # 1 MiB left: not split (needs > 1 MiB)
            elif kind == 2:
                reqs.append(b - MiB - 512 * (k + 1))  # just over 1 MiB left: split
            elif kind == 3:
                reqs.append(b + 512 * (k + 1))  # next block up, split
            else:
                reqs.append(b - 3 * MiB - 512 * k + 1)  # rounds up to the next 512
        rng.shuffle(reqs)
        got = [tr.alloc(r) for r in reqs]
        tr.free_many(got[::2])
        # Requests that fit the split remainders or the merged blocks.
        got2 = [tr.alloc(MiB + 512 * (3 * j + 1) + rnd * 512) for j in range(6)]
        got3 = [tr.alloc(b - 2 * MiB - 512 * j) for j, b in enumerate(blocks[1:30:4])]
        tr.free_many(got + got2 + got3)
        tr.empty_cache()  # the next round's sizes overlap this round's
    # Small pool: holes of distinct sizes inside 2 MiB segments.
    for rnd in range(8):
        ids = []
        for k in range(60):
            ids.append(tr.alloc((k + 1) * 512 * (rnd + 1) + 512 * rnd))
            ids.append(tr.alloc(700 + 512 * k))  # separators keep the holes apart
        tr.free_many(ids[0::2])
        reqs = [(k + 1) * 512 * (rnd + 1) + 512 * rnd - 100 for k in range(0, 60, 2)]
        rng.shuffle(reqs)
        got = [tr.alloc(r) for r in reqs]
        tr.free_many(got)
        tr.free_many(ids[1::2])
        tr.empty_cache()
    # Mid pool: 20 MiB segments with holes of distinct sizes.
    for rnd in range(8):
        ids = [tr.alloc((2 + k % 7) * MiB + (37 * k + 11 * rnd) * 1024) for k in range(40)]
        tr.free_many(ids[1::3])
        got = [tr.alloc(MiB + (300 * j + 7 * rnd + 1) * 1024) for j in range(20)]
        tr.free_many(ids + got)
        tr.empty_cache()
    return tr


def t_oversize():
    """Requests straddling 20, 64 and 256 MiB, for max_split_size_mb 20 / 64 / 256.

    Oversize blocks (>= max_split_size) are never split; an oversize request may reuse a cached
    oversize block only when block < request + max_non_split_rounding (20 MiB by default)."""
    tr = Trace("oversize", 105)
    rng = tr.rng
    edges = []
    for t in (20, 64, 256):
        edges += [t * MiB - 512 * KiB, t * MiB - 1, t * MiB, t * MiB + 1, t * MiB + 512 * KiB,
                  (t + 1) * MiB]
    for s in edges:
        tr.alloc(s)
    tr.free_all()
    # Reuse within and beyond the rounding window: cache a block of size B, ask for B - d.
    for B in (30 * MiB, 70 * MiB, 100 * MiB, 270 * MiB, 300 * MiB, 600 * MiB):
        for d in (0, 1, MiB, 10 * MiB, 19 * MiB, 19 * MiB + 512 * KiB, 20 * MiB, 21 * MiB,
                  40 * MiB):
            if B - d <= 10 * MiB:
                continue
            b = tr.alloc(B)
            tr.free(b)
            x = tr.alloc(B - d)
            y = tr.alloc(B - d + 3 * MiB)
            tr.free(x)
            tr.free(y)
        tr.empty_cache()
    # 1-10 MiB requests make 20 MiB segments: under max_split_size_mb:20 those segments are
    # oversize themselves, so a freed, merged one cannot serve the next small request.
    mid = lu(MiB + 1, 10 * MiB)
    for rnd in range(12):
        ids = [tr.alloc(mid(rng)) for _ in range(12)]
        tr.free_random(0.8)
        ids = [tr.alloc(rng.choice([20 * MiB, 19 * MiB, 21 * MiB, 30 * MiB])) for _ in range(4)]
        tr.free_many(ids)
        if rnd % 4 == 3:
            tr.free_all()
            tr.empty_cache()
    tr.free_all()
    # General churn over all three thresholds.
    sizes = mix(
        (35, lu(MiB + 1, 30 * MiB)),
        (35, lu(30 * MiB, 300 * MiB)),
        (20, lu(300 * MiB, 900 * MiB)),
        (10, lu(512, MiB)),
    )
    for rnd in range(4):
        churn(tr, 550, sizes, 8, 40, bytes_hi=3 * GiB, lifo=0.2 + 0.2 * rnd)
        tr.empty_cache()
    return tr


def t_nonsplit_rounding():
    """Oversize reuse windows for max_non_split_rounding_mb 20 / 64 / 512 (max_split_size 32).

    Cached oversize blocks are bigger than the request by gaps on both sides of 20, 64 and 512 MiB,
    so each rounding limit takes a different set of them."""
    tr = Trace("nonsplit_rounding", 106)
    rng = tr.rng
    gaps = [0, 2 * MiB, 18 * MiB, 20 * MiB, 22 * MiB, 40 * MiB, 62 * MiB, 64 * MiB, 66 * MiB,
            200 * MiB, 510 * MiB, 512 * MiB, 514 * MiB, 700 * MiB]
    for rnd in range(10):
        blocks = [34 * MiB + k * 38 * MiB + rnd * 2 * MiB for k in range(24)]
        rng.shuffle(blocks)
        ids = [tr.alloc(s) for s in blocks]
        tr.free_many(ids)
        got = []
        for _ in range(30):
            b = rng.choice(blocks)
            g = rng.choice(gaps)
            r = b - g
            if r < 33 * MiB:
                r = 33 * MiB + rng.randint(0, 8) * MiB
            got.append(tr.alloc(r))
            if rng.random() < 0.4:
                tr.free(got.pop(rng.randrange(len(got))))
        # Some non-oversize requests, which never take an oversize block.
        small = [tr.alloc(log_uniform(rng, 2 * MiB, 31 * MiB)) for _ in range(20)]
        tr.free_many(got + small)
        tr.empty_cache()
    sizes = mix((60, lu(32 * MiB, 800 * MiB)), (30, lu(MiB, 32 * MiB)), (10, lu(512, MiB)))
    churn(tr, 500, sizes, 5, 30, bytes_hi=4 * GiB)
    tr.empty_cache()
    churn(tr, 500, sizes, 5, 30, bytes_hi=4 * GiB, lifo=0.2)
    return tr


def t_roundup():
    """Sizes across all power-of-two intervals from 1 KiB to 3 GiB for roundup_power2_divisions.

    Includes exact powers of two, 2^k + 1 and sizes below 512 * divisions (not rounded), and sizes
    in the [1, 2) GiB and [2, 4) GiB intervals that the list forms treat differently."""
    tr = Trace("roundup", 107)
    rng = tr.rng
    specials = []
    for k in range(10, 32):
        p = 1 << k
        specials += [p, p + 1, p - 1, p + p // 8 + 1, p + p // 3]
    specials = [s for s in specials if s <= 3 * GiB]
    for s in specials:
        i = tr.alloc(s)
        if s > 512 * MiB:
            tr.free(i)
    tr.free_all()
    sizes = mix(
        (25, lu(256, MiB)),
        (25, lu(MiB, 64 * MiB)),
        (20, lu(64 * MiB, 512 * MiB)),
        (10, lu(512 * MiB, 3 * GiB)),
        (20, choice(specials)),
    )
    churn(tr, 1500, sizes, 20, 120, bytes_hi=6 * GiB)
    tr.empty_cache()
    churn(tr, 1500, sizes, 20, 150, bytes_hi=6 * GiB, lifo=0.2)
    tr.free_random(0.5)
    churn(tr, 800, sizes, 10, 80, bytes_hi=4 * GiB, lifo=0.8)
    return tr


def t_gc():
    """garbage_collection_threshold with fraction 0.02 (cap 2.4-3.2 GiB on a 120-160 GiB card).

    A few hot sizes are reused all the time; cold requests grow over time (a sawtooth, like a
    growing batch), so they seldom fit what is cached: the cache fills with older, bigger-than-
    needed-before blocks, reserved memory passes the threshold, and the collector frees the blocks
    that have waited longest. Without the threshold the cap is hit instead (retry path).
    Every request gets a random sub-MiB offset, so no two cached blocks of different segments
    have the same size: the outcome does not depend on device addresses."""
    tr = Trace("gc", 108)
    rng = tr.rng
    hot = [24 * MiB, 48 * MiB, 96 * MiB, 160 * MiB]
    hot_ids = []
    steps = 2400
    for step in range(steps):
        if hot_ids and rng.random() < 0.5:
            tr.free(hot_ids.pop(rng.randrange(len(hot_ids))))
        if len(hot_ids) < 5:
            hot_ids.append(tr.alloc(rng.choice(hot) + jitter(rng)))
        # Cold: grows from ~30 MiB to ~450 MiB within each of three teeth.
        if rng.random() < 0.3:
            phase = (step % (steps // 3)) / (steps // 3)
            base = 30 * MiB + int(phase * 420 * MiB)
            c = tr.alloc(base + rng.randint(-8, 8) * MiB + jitter(rng))
            if rng.random() < 0.85:
                tr.free(c)
        if rng.random() < 0.15:
            x = tr.alloc(log_uniform(rng, 512, 6 * MiB) + jitter(rng) % 65536)  # never collected
            tr.free(x)
        while tr.live_bytes > 800 * MiB:
            cold = sorted(i for i in tr.live if i not in hot_ids)
            victim = rng.choice(cold or hot_ids)
            if victim in hot_ids:
                hot_ids.remove(victim)
            tr.free(victim)
    return tr


def _fill_until(tr, size_fn, limit_bytes, rng):
    """Allocate until the live requested bytes exceed limit_bytes; returns the ids."""
    ids = []
    while tr.live_bytes <= limit_bytes:
        ids.append(tr.alloc(size_fn(rng)))
    return ids


def _oom_cycles(tr, cap_min, cap_max, unit_sizes, rounds):
    """Fill past the largest cap (allocations fail), free part, allocate other sizes (the retry
    paths release cached blocks), repeat with different sizes."""
    rng = tr.rng
    for rnd in range(rounds):
        unit = unit_sizes[rnd % len(unit_sizes)]
        ids = _fill_until(tr, lambda r: unit + r.randint(0, 3) * MiB + jitter(r),
                          int(cap_max * 1.15), rng)
        # Free every other allocation (frees of allocations that failed are skipped by both
        # replays), then ask for different sizes that do not fit the freed holes.
        tr.free_many(ids[::2])
        other = unit_sizes[(rnd + 1) % len(unit_sizes)] + 5 * MiB
        more = []
        while tr.live_bytes + other + MiB < cap_min * 0.85:
            more.append(tr.alloc(other + jitter(rng)))
        # Small and mid requests under pressure need new 2 / 20 MiB segments.
        extra = [tr.alloc(log_uniform(rng, 512, 6 * MiB)) for _ in range(40)]
        tr.free_many(extra[::3])
        tr.free_random(0.6)
        if rnd % 3 == 2:
            tr.free_all()
            tr.empty_cache()
    tr.free_all()


def t_oom_small_cap():
    """Fraction 0.005: cap 0.6-0.8 GiB. Fill, fail, free, retry."""
    tr = Trace("oom_small_cap", 109)
    f = 0.005
    cap_min, cap_max = f * TOTAL_MIN, f * TOTAL_MAX
    _oom_cycles(tr, cap_min, cap_max, [24 * MiB, 40 * MiB, 16 * MiB, 70 * MiB], 8)
    # 1-10 MiB requests past the cap: 20 MiB segments.
    rng = tr.rng
    ids = _fill_until(tr, lambda r: log_uniform(r, MiB + 1, 10 * MiB), int(cap_max * 1.1), rng)
    tr.free_random(0.5)
    churn(tr, 600, mix((50, lu(512, MiB)), (50, lu(MiB, 40 * MiB))), 10, 80,
          bytes_hi=cap_min * 0.7)
    tr.free_all()
    # Cache full of large blocks, then small requests: each new 2 MiB segment needs the cached
    # large blocks released first (retry path), without failing.
    ids = _fill_until(tr, lambda r: 30 * MiB + r.randint(0, 9) * MiB, int(cap_min * 0.9), rng)
    tr.free_many(ids)
    _fill_until(tr, lambda r: log_uniform(r, 256 * KiB, MiB), int(cap_min * 0.8), rng)
    tr.free_random(0.5)
    ids = [tr.alloc(200 * MiB) for _ in range(6)]  # and then past the cap
    return tr


def t_oom_mid_cap():
    """Fraction 0.02: cap 2.4-3.2 GiB. Cached oversize blocks + OOM (release one oversize block,
    release several, free all cached, fail)."""
    tr = Trace("oom_mid_cap", 110)
    rng = tr.rng
    f = 0.02
    cap_min, cap_max = f * TOTAL_MIN, f * TOTAL_MAX
    for rnd in range(8):
        # Cache distinct oversize blocks (100-300 MiB) totalling ~2.1 GiB (< smallest cap).
        sizes = [(100 + 12 * k + rnd) * MiB for k in range(12)]
        rng.shuffle(sizes)
        ids = [tr.alloc(s) for s in sizes]
        tr.free_many(ids)
        # Requests that no cached block serves within request + 20 MiB: the cap forces the
        # allocator to release cached blocks (one big enough one, or several, or all).
        for r in (350 * MiB, 150 * MiB + 3, 520 * MiB, 90 * MiB, 260 * MiB):
            x = tr.alloc(r + rnd * MiB)
            tr.free(x)
        # Hard OOM: more live memory than any cap.
        ids = _fill_until(tr, lambda r: (64 + r.randint(0, 64)) * MiB, int(cap_max * 1.15), rng)
        tr.free_many(ids[::2])
        got = [tr.alloc(rng.choice([30, 90, 200]) * MiB) for _ in range(5)]
        tr.free_many(got)
        # Small / mid requests while the cache holds most of the cap.
        extra = [tr.alloc(log_uniform(rng, 512, 8 * MiB)) for _ in range(60)]
        tr.free_many(extra)
        tr.free_all()
        if rnd % 4 == 3:
            tr.empty_cache()
    sizes = mix((40, lu(512, MiB)), (30, lu(MiB, 20 * MiB)), (30, lu(20 * MiB, 400 * MiB)))
    churn(tr, 800, sizes, 10, 60, bytes_hi=cap_max * 1.1)
    return tr


def t_oom_big_cap():
    """Fraction 0.05: cap 6-8 GiB; oversize blocks of 100 MiB - 1.5 GiB."""
    tr = Trace("oom_big_cap", 111)
    rng = tr.rng
    f = 0.05
    cap_min, cap_max = f * TOTAL_MIN, f * TOTAL_MAX
    for rnd in range(6):
        sizes = [(200 + 90 * k + 3 * rnd) * MiB for k in range(12)]  # 200 MiB .. 1.2 GiB
        rng.shuffle(sizes)
        ids = [tr.alloc(s) for s in sizes[:9]]  # ~5 GiB < smallest cap
        tr.free_many(ids)
        for r in (1400 * MiB, 600 * MiB + 7, 2 * GiB, 150 * MiB, 250 * MiB + 1):
            x = tr.alloc(r)
            tr.free(x)
        ids = _fill_until(tr, lambda r: (128 + 64 * r.randint(0, 12)) * MiB, int(cap_max * 1.15),
                          rng)
        tr.free_many(ids[1::2])
        got = [tr.alloc(rng.choice([100, 300, 700]) * MiB + 1) for _ in range(4)]
        tr.free_many(got)
        mids = [tr.alloc(log_uniform(rng, MiB, 30 * MiB)) for _ in range(80)]
        tr.free_many(mids[::2])
        tr.free_all()
        if rnd % 2 == 1:
            tr.empty_cache()
    sizes = mix((30, lu(MiB, 64 * MiB)), (50, lu(64 * MiB, 1200 * MiB)), (20, lu(512, MiB)))
    churn(tr, 1000, sizes, 5, 40, bytes_hi=cap_max * 1.1)
    return tr


def t_expandable():
    """expandable_segments: small and large requests, holes, unmapping on empty_cache."""
    tr = Trace("expandable", 112)
    rng = tr.rng
    for rnd in range(10):
        # A run of large blocks, then every other one freed: holes inside the segment.
        ids = [tr.alloc(rng.choice([30, 50, 90, 200]) * MiB + rng.randint(0, 4096))
               for _ in range(20)]
        tr.free_many(ids[::2])
        # Requests that fit a hole, that fit after merging, and that need the segment to grow.
        got = [tr.alloc(s) for s in (25 * MiB, 95 * MiB, 250 * MiB, 12 * MiB + 1, 400 * MiB)]
        smalls = [tr.alloc(log_uniform(rng, 512, MiB)) for _ in range(60)]
        tr.free_many(smalls[::2])
        mids = [tr.alloc(log_uniform(rng, MiB + 1, 10 * MiB)) for _ in range(20)]
        tr.free_many(mids[1::2])
        tr.free_many(got)
        if rnd % 3 == 1:
            tr.empty_cache()  # unmaps the free pages, keeps the live ones
        tr.free_random(0.7)
    tr.free_all()
    tr.empty_cache()
    sizes = mix((40, lu(512, MiB)), (25, lu(MiB, 10 * MiB)), (30, lu(10 * MiB, 500 * MiB)),
                (5, lu(500 * MiB, 2 * GiB)))
    churn(tr, 1200, sizes, 20, 200, bytes_hi=6 * GiB)
    tr.empty_cache()
    churn(tr, 800, sizes, 20, 150, bytes_hi=6 * GiB, lifo=0.2)
    return tr


def t_empty_cache():
    """empty_cache in the middle of work: only whole (unsplit) cached segments are released."""
    tr = Trace("empty_cache", 113)
    sizes = mix((35, lu(512, MiB)), (25, lu(MiB, 10 * MiB)), (30, lu(10 * MiB, 300 * MiB)),
                (10, lu(300 * MiB, GiB)))
    for rnd in range(14):
        churn(tr, 160, sizes, 20, 120, bytes_hi=4 * GiB, lifo=0.3 + 0.05 * (rnd % 5))
        tr.free_random(0.6)
        tr.empty_cache()
        if rnd % 5 == 4:
            tr.empty_cache()  # twice in a row: the second finds nothing to release
    tr.free_all()
    tr.empty_cache()
    return tr


def t_training():
    """A training loop: parameters, optimizer state, per-layer activations kept for backward,
    temporaries, gradients; the batch grows (with a few dips) so activation sizes change."""
    tr = Trace("training", 114)
    rng = tr.rng
    layers, hidden, seq, heads, vocab = 8, 768, 256, 12, 32000
    f32 = 4
    param_shapes = [vocab * hidden]  # embedding
    for _ in range(layers):
        param_shapes += [3 * hidden * hidden, 3 * hidden, hidden * hidden, hidden,
                         4 * hidden * hidden, 4 * hidden, 4 * hidden * hidden, hidden,
                         hidden, hidden, hidden, hidden]
    params = [tr.alloc(n * f32) for n in param_shapes]
    opt_state = []
    grads = []
    batches = [4, 4, 6, 8, 8, 8, 12, 10, 12, 16, 16, 14, 16, 20, 24, 24, 22, 24, 28, 32, 32, 28, 32]
    for it, b in enumerate(batches):
        tok = b * seq
        acts = []
        # Forward: keep activations for backward, free temporaries right away.
        x = tr.alloc(tok * hidden * f32)
        acts.append(x)
        for layer in range(layers):
            ln = tr.alloc(tok * hidden * f32)
            qkv = tr.alloc(tok * 3 * hidden * f32)
            scores = tr.alloc(b * heads * seq * seq * f32)
            probs = tr.alloc(b * heads * seq * seq * f32)
            tr.free(scores)
            ctx = tr.alloc(tok * hidden * f32)
            tmp = tr.alloc(tok * hidden * f32)
            tr.free(tmp)
            h1 = tr.alloc(tok * 4 * hidden * f32)
            gelu = tr.alloc(tok * 4 * hidden * f32)
            out = tr.alloc(tok * hidden * f32)
            stats = [tr.alloc(tok * f32) for _ in range(2)]  # layernorm mean / rstd (small)
            acts += [ln, qkv, probs, ctx, h1, gelu, out] + stats
        logits = tr.alloc(tok * 1024 * f32)  # sampled softmax head keeps this bounded
        loss = tr.alloc(4)
        tr.free(logits)
        # Backward: walk the layers in reverse, free their activations, make gradients.
        grad_x = tr.alloc(tok * hidden * f32)
        pi = len(params) - 1
        for layer in reversed(range(layers)):
            layer_acts = acts[1 + layer * 9: 1 + (layer + 1) * 9]
            g_tmp = [tr.alloc(tok * 4 * hidden * f32), tr.alloc(b * heads * seq * seq * f32)]
            for _ in range(12):
                grads.append(tr.alloc(param_shapes[pi] * f32))
                pi -= 1
            tr.free_many(g_tmp)
            tr.free_many(layer_acts)
            new_grad_x = tr.alloc(tok * hidden * f32)
            tr.free(grad_x)
            grad_x = new_grad_x
        grads.append(tr.alloc(param_shapes[0] * f32))
        tr.free(grad_x)
        tr.free_many(acts[:1])
        tr.free(loss)
        # Optimizer: Adam state made on the first step, a few temporaries per parameter.
        if not opt_state:
            for n in param_shapes:
                opt_state += [tr.alloc(n * f32), tr.alloc(n * f32)]
        for n in param_shapes[:: max(1, len(param_shapes) // 12)]:
            t = tr.alloc(n * f32)
            tr.free(t)
        # zero_grad(set_to_none=True)
        rng.shuffle(grads)
        tr.free_many(grads)
        grads = []
        if it in (9, 18):
            tr.empty_cache()
    tr.free_many(opt_state)
    tr.free_many(params)
    return tr


def t_random_mix():
    """Random mix of every size class with a fixed seed (run under several confs)."""
    tr = Trace("random_mix", 115)
    sizes = mix(
        (40, lu(1, MiB)),
        (20, lu(MiB + 1, 10 * MiB)),
        (30, lu(10 * MiB, 256 * MiB)),
        (8, lu(256 * MiB, GiB)),
        (2, lu(GiB, 2 * GiB)),
    )
    for phase in range(6):
        churn(tr, 1250, sizes, 30, 260, bytes_hi=4 * GiB + phase * 256 * MiB,
              lifo=[0.5, 0.2, 0.8, 0.4, 0.6, 0.3][phase])
        if phase in (1, 3, 4):
            tr.empty_cache()
    return tr


TRACES = {
    "small_pool": t_small_pool,
    "mid_pool": t_mid_pool,
    "large_pool": t_large_pool,
    "best_fit": t_best_fit,
    "oversize": t_oversize,
    "nonsplit_rounding": t_nonsplit_rounding,
    "roundup": t_roundup,
    "gc": t_gc,
    "oom_small_cap": t_oom_small_cap,
    "oom_mid_cap": t_oom_mid_cap,
    "oom_big_cap": t_oom_big_cap,
    "expandable": t_expandable,
    "empty_cache": t_empty_cache,
    "training": t_training,
    "random_mix": t_random_mix,
}

# (case name, trace, conf, fraction)
CASES = [
    ("small_pool", "small_pool", "", None),
    ("mid_pool", "mid_pool", "", None),
    ("mid_pool_max_split_20", "mid_pool", "max_split_size_mb:20", None),
    ("large_pool", "large_pool", "", None),
    ("large_pool_release_lock", "large_pool", "release_lock_on_cudamalloc:True", None),
    ("best_fit", "best_fit", "", None),
    ("oversize_max_split_20", "oversize", "max_split_size_mb:20", None),
    ("oversize_max_split_64", "oversize", "max_split_size_mb:64", None),
    ("oversize_max_split_256", "oversize", "max_split_size_mb:256", None),
    ("nonsplit_rounding_20", "nonsplit_rounding",
     "max_split_size_mb:32,max_non_split_rounding_mb:20", None),
    ("nonsplit_rounding_64", "nonsplit_rounding",
     "max_split_size_mb:32,max_non_split_rounding_mb:64", None),
    ("nonsplit_rounding_512", "nonsplit_rounding",
     "max_split_size_mb:32,max_non_split_rounding_mb:512", None),
    ("roundup_2", "roundup", "roundup_power2_divisions:2", None),
    ("roundup_4", "roundup", "roundup_power2_divisions:4", None),
    ("roundup_8", "roundup", "roundup_power2_divisions:8", None),
    ("roundup_16", "roundup", "roundup_power2_divisions:16", None),
    ("roundup_list_a", "roundup", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", None),
    ("roundup_list_b", "roundup", "roundup_power2_divisions:[1:4,>:1]", None),
    ("roundup_list_c", "roundup", "roundup_power2_divisions:[64:8,256:4,1024:4,>:1]", None),
    ("gc_0.5", "gc", "garbage_collection_threshold:0.5", 0.02),
    ("gc_0.8", "gc", "garbage_collection_threshold:0.8", 0.02),
    ("gc_off", "gc", "", 0.02),
    ("oom_f0.005", "oom_small_cap", "", 0.005),
    ("oom_f0.02", "oom_mid_cap", "", 0.02),
    ("oom_f0.02_max_split_64", "oom_mid_cap", "max_split_size_mb:64", 0.02),
    ("oom_f0.05_max_split_256", "oom_big_cap", "max_split_size_mb:256", 0.05),
    ("expandable", "expandable", "expandable_segments:True", None),
    ("expandable_f0.02", "oom_mid_cap", "expandable_segments:True", 0.02),
    ("empty_cache", "empty_cache", "", None),
    ("empty_cache_max_split_64", "empty_cache", "max_split_size_mb:64", None),
    ("training", "training", "", None),
    ("training_expandable", "training", "expandable_segments:True", None),
    ("random_mix", "random_mix", "", None),
    ("random_mix_max_split_roundup", "random_mix",
     "max_split_size_mb:128,roundup_power2_divisions:4", None),
    ("random_mix_expandable", "random_mix", "expandable_segments:True", None),
    ("random_mix_f0.05_gc", "random_mix",
     "max_split_size_mb:64,garbage_collection_threshold:0.6", 0.05),
]


def build_all():
    """{trace name: Trace}."""
    return {name: fn() for name, fn in TRACES.items()}


def header_conf_for(trace_name):
    """The header records the conf only when one case uses the trace; a shared trace says ""
    (both replays are always told the case's conf)."""
    users = [c for c in CASES if c[1] == trace_name]
    if len(users) == 1:
        _, _, conf, fraction = users[0]
        return cudapool_conf(conf, fraction)
    return ""


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=here, help="where traces/ and cases.json go")
    ap.add_argument("--if-missing", action="store_true",
                    help="do nothing when cases.json and every trace it names exist")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    args = ap.parse_args(argv)

    if args.list:
        for name, trace, conf, fraction in CASES:
            print("%-32s %-18s %-55s %s" % (name, trace, conf or '""', fraction))
        return 0

    out_dir = os.path.abspath(args.out_dir)
    trace_dir = os.path.join(out_dir, "traces")
    cases_path = os.path.join(out_dir, "cases.json")
    if args.if_missing and os.path.exists(cases_path):
        with open(cases_path) as f:
            existing = json.load(f)
        if all(os.path.exists(os.path.join(out_dir, "traces", os.path.basename(c["trace"])))
               for c in existing["cases"]):
            print("make_traces: traces present, nothing to do")
            return 0

    os.makedirs(trace_dir, exist_ok=True)
    traces = build_all()
    # The repo-relative path the cases name (run_parity.py resolves it from the repo root).
    rel_dir = "tests/parity/traces"
    total_bytes = 0
    counts = {}
    for name, tr in traces.items():
        n = len(tr.events)
        if not 2000 <= n <= 40000:
            print("make_traces: %s has %d events (want 2k-40k)" % (name, n), file=sys.stderr)
            return 1
        data = "\n".join(tr.lines(header_conf_for(name))) + "\n"
        path = os.path.join(trace_dir, name + ".jsonl")
        with open(path, "w", newline="\n") as f:
            f.write(data)
        total_bytes += len(data.encode())
        counts[name] = n
        allocs = sum(1 for e in tr.events if e[0] == "alloc")
        ecs = sum(1 for e in tr.events if e[0] == "empty_cache")
        print("%-18s %6d events %6d allocs %3d empty_cache %9d bytes"
              % (name, n, allocs, ecs, len(data.encode())))
    unused = set(traces) - {c[1] for c in CASES}
    if unused:
        print("make_traces: traces without a case: %s" % sorted(unused), file=sys.stderr)
        return 1
    cases = {
        "schema": "cudapool.parity-cases/1",
        "generated_by": "tests/parity/make_traces.py",
        "cases": [
            {
                "name": name,
                "trace": "%s/%s.jsonl" % (rel_dir, trace),
                "conf": conf,
                "fraction": fraction,
                "events": counts[trace],
            }
            for name, trace, conf, fraction in CASES
        ],
    }
    names = [c["name"] for c in cases["cases"]]
    assert len(names) == len(set(names)), "duplicate case names"
    with open(cases_path, "w", newline="\n") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    print("make_traces: %d traces, %d cases, %d bytes of traces"
          % (len(traces), len(CASES), total_bytes))
    if total_bytes >= 8 * 1000 * 1000:
        print("make_traces: traces total %d bytes (limit 8 MB)" % total_bytes, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
