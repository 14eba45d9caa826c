"""cudapool_analysis/oom.py: an oom event's figures (docs/log-format.md, the oom action) and the
explanation the shim printed on stderr for them (pool/oom.cpp), which the report repeats.

Not here: deciding the cause (the shim did, the event carries it), counting oom events
(accounting.py).
"""

from . import vocabulary as v
from .reader import optional_int

FIGURES = ("block_size",) + v.OOM_FIGURES


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
    if f["cause"] == "cap":
        need = (f["reserved"] + f["segment_size"]) / f["device_total"] if f["device_total"] else 1.0
        out.append("  why: the memory cap refused it, the device had room. Raise "
                   "per_process_memory_fraction to at least %.2f, or unset it"
                   % (1.0 if need > 1.0 else need + 0.005))
    elif f["cause"] == "fragmentation":
        out.append("  why: fragmentation: %s is reserved but unallocated, yet no free block holds %s. "
                   "Try expandable_segments:True, or see what `cudapool tune` finds for this log"
                   % (mib_text(unallocated), mib_text(f["block_size"])))
    else:
        out.append("  why: the program holds %s of the device's %s; no setting of the pool frees "
                   "that: use less memory (smaller batches) or a larger device"
                   % (mib_text(f["allocated"]), mib_text(f["device_total"])))
    return out
