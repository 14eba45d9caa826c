# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/oom.py: an oom event's figures (docs/log-format.md, the oom action), as the
Python report (report.py, the engine's oracle) and the page's data (pagedata.py) keep them.

Not here: deciding the cause (the shim did, the event carries it), counting oom events
(accounting.py), the explanation the shim printed for them: pool/oom.cpp alone writes it, and the
analysis engine puts its lines in its document (docs/analysis-format.md), which the report prints.

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

from cudapool_analysis import vocabulary as v
from oracle.reader import optional_int

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
