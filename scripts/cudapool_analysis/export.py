"""cudapool_analysis/export.py: what the Python passes of the two exports (`cudapool export
--memory-viz`, memviz.build; `--perfetto`, perfetto_oracle.py; docs/exports.md) share: the log
whose pool decisions they draw (the log itself, or the C++ replay's log of a request-only log:
replayed.pool_events), and the logs checked by the reader before the long work. The command line
runs the analysis engine instead (it checks, reads and replays the logs itself); these passes are
the oracles the engine is checked against (tests/cli/perfetto_agree.sh, memviz_agree.sh).

Not here: what either export writes, writing OUT (outfile.py: whole or not at all, never over an
input or a log), the wall clock of a log's events (clock.py, which the HTML page uses too), the
command line (exportcli.py).
"""

import contextlib
import importlib.util

from .reader import LogError, check_logs as _check_logs


class ExportError(Exception):
    """A log that cannot be exported; the message says why."""


def pool_log(path):
    """A context manager yielding the path of a log with pool decisions for the log at path: the
    log itself when it has them, else a replay's log of its requests (replayed.pool_events, which
    runs `cudapool-replay --write-log`; LogError when it cannot). Without replayed.py the log
    itself. Call check_logs() first: a replay takes anything for a log."""
    if importlib.util.find_spec(__package__ + ".replayed") is None:
        return contextlib.nullcontext(path)
    from .replayed import pool_events
    return pool_events(path)


def check_logs(paths):
    """The headers of the logs at paths (reader.check_log: None for a log without one), before
    any long work: LogError for the first that cannot be opened (missing, a directory, empty,
    compressed) or is not a log."""
    headers, errors = _check_logs(paths)
    if errors:
        raise LogError(errors[0])
    return headers


__all__ = ["ExportError", "LogError", "pool_log", "check_logs"]
