# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/rank.py: the rank a log's header names (its rank field, else the launcher's
environment variables, as the log path's %r): the Perfetto export's process names, and the report
oracle's cross-rank table (tests/oracle/report.py). Not here: the engine's own rule (the same one,
tools/analyze/report.cpp), the cross-rank table itself (the engine's).
"""

from . import vocabulary as v


def header_rank(header):
    """The rank a header names: its rank field, else the first set and non-empty of RANK,
    OMPI_COMM_WORLD_RANK, SLURM_PROCID in its environment (as the log's %r); or None."""
    if not header:
        return None
    if type(header.get("rank")) is int:
        return header["rank"]
    for field in ("environment", "env"):
        env = header.get(field)
        if isinstance(env, dict):
            for name in v.RANK_VARIABLES:
                value = env.get(name)
                if isinstance(value, str) and value:
                    return int(value) if value.isascii() and value.isdigit() else None
    return None
