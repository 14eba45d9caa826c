"""cudapool_analysis/oom.py: an oom event's figures (docs/log-format.md, the oom action) and the
explanation the shim printed on stderr for them (pool/oom.cpp), which the report repeats: the
same sentences from the same figures (tests/fakecuda/oom_causes.sh compares the two).

Not here: deciding the cause (the shim did, the event carries it), counting oom events
(accounting.py).
"""

from . import vocabulary as v
from .reader import optional_int

FIGURES = ("block_size",) + v.OOM_FIGURES

# pool/constants.h and pool/oom.cpp
MIB = 1 << 20
MIN_BLOCK = 512                 # kMinBlockSize
ROUND_LARGE = 2 * MIB           # kRoundLarge: segments of 10 MiB and more round up to it
DEFAULT_LARGE_SEGMENT = 20 * MIB
MAX_DIVISIONS = 1 << 54         # roundup_power2_divisions' largest value (config/key_values.cpp)


def oom_figures(obj, size):
    """The figures of an oom event of the shim, or None when it has no cause (another writer).
    size: the event's requested bytes. Raises reader.Malformed for a figure of the wrong kind."""
    cause = obj.get("cause")
    if cause not in v.OOM_CAUSES:
        return None
    f = {"cause": cause, "requested": size}
    for k in FIGURES:
        f[k] = optional_int(obj, k, 0)
    f["device_free_known"] = "device_free" in obj
    return f


def mib_text(b):
    if b >= 1 << 30:
        return "%.2f GiB" % (b / (1 << 30))
    if b >= 1 << 20:
        return "%.2f MiB" % (b / (1 << 20))
    return "%d bytes" % b


def _round_up(b, step):
    return b if b % step == 0 else b + (step - b % step)


def _room(f):
    """(bytes a new segment could have had, whether the cap is what limits them): the device's
    free memory, or under the cap what the cap left (pool/oom.cpp room_of)."""
    under_cap = f["cap"] - f["reserved"] if f["cap"] > f["reserved"] else 0
    cap_binds = f["cap"] != 0 and (not f["device_free_known"] or under_cap < f["device_free"])
    if cap_binds:
        return under_cap, True
    return (f["device_free"] if f["device_free_known"] else 0), False


def _round_to_division(size, divisions):
    """pool/rounding.cpp round_to_power2_division."""
    if size & (size - 1) == 0:
        return size
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    below = size & ~(step - 1)
    return size if below == size else below + step


def _divisions_that_fit(requested, room):
    """The fewest divisions whose block for `requested` gets a segment of at most `room` bytes;
    0 when none does (pool/oom.cpp divisions_that_fit)."""
    d = 2
    while d <= MAX_DIVISIONS:
        block = (_round_to_division(requested, d) if requested > MIN_BLOCK * d
                 else _round_up(requested, MIN_BLOCK))
        if _round_up(block, ROUND_LARGE) <= room:
            return d
        d *= 2
    return 0


def explain_oom(f, dev):
    """The explanation of an oom event, as the shim printed it (pool/oom.cpp); [] without figures."""
    if not f:
        return []
    unallocated = max(0, f["reserved"] - f["allocated"])
    out = ["out of memory on device %d: tried to allocate %s (a block of %s, from a new segment of %s)"
           % (dev, mib_text(f["requested"]), mib_text(f["block_size"]), mib_text(f["segment_size"])),
           "  device: %s total, %s free%s" % (
               mib_text(f["device_total"]),
               mib_text(f["device_free"]) if f["device_free_known"] else "(unknown)",
               ", cap %s (per_process_memory_fraction)" % mib_text(f["cap"]) if f["cap"] else ""),
           "  pool: %s reserved, %s allocated, %s reserved but unallocated in %d free cached block%s "
           "(the largest %s)" % (mib_text(f["reserved"]), mib_text(f["allocated"]),
                                 mib_text(unallocated), f["free_blocks"],
                                 "" if f["free_blocks"] == 1 else "s",
                                 mib_text(f["largest_free_block"]))]
    room, cap_binds = _room(f)
    under_cap = " under the cap (per_process_memory_fraction)" if cap_binds else ""
    if f["cause"] == "cap":
        need = (f["reserved"] + f["segment_size"]) / f["device_total"] if f["device_total"] else 1.0
        out.append("  why: the memory cap refused it, the device had room. Raise "
                   "per_process_memory_fraction to at least %.2f, or unset it"
                   % (1.0 if need > 1.0 else need + 0.005))
    elif f["cause"] == "fragmentation":
        out.append("  why: fragmentation: %s is reserved but unallocated, yet no free block holds %s. "
                   "Try expandable_segments:True, or see what `cudapool tune` finds for a log of "
                   "this run (CUDAPOOL_LOG)" % (mib_text(unallocated), mib_text(f["block_size"])))
    elif f["cause"] == "large_segment_size":
        most = room // (2 * MIB) * 2
        default_fits = most * MIB >= DEFAULT_LARGE_SEGMENT and f["segment_size"] != DEFAULT_LARGE_SEGMENT
        out.append("  why: a setting: large_segment_size_mb:%d made the pool ask for %s for a block "
                   "of %s, and %s was free%s. Set large_segment_size_mb to at most %d%s"
                   % (f["segment_size"] // MIB, mib_text(f["segment_size"]),
                      mib_text(f["block_size"]), mib_text(room), under_cap, most,
                      ", or leave it unset (20)" if default_fits else ""))
    elif f["cause"] == "roundup":
        d = _divisions_that_fit(f["requested"], room)
        start = 1 << (f["requested"].bit_length() - 1) if f["requested"] else 0
        out.append("  why: a setting: roundup_power2_divisions rounded %s up to a block of %s, and "
                   "%s was free%s, enough for the request itself (%s). Use at least %d divisions "
                   "for sizes from %s (list entry %d:%d), or leave roundup_power2_divisions unset"
                   % (mib_text(f["requested"]), mib_text(f["block_size"]), mib_text(room),
                      under_cap, mib_text(_round_up(_round_up(f["requested"], MIN_BLOCK),
                                                    ROUND_LARGE)),
                      d, mib_text(start), start // MIB, d))
    else:
        out.append("  why: the program holds %s of the device's %s; no setting of the pool frees "
                   "that: use less memory (smaller batches) or a larger device"
                   % (mib_text(f["allocated"]), mib_text(f["device_total"])))
    return out
