# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/pool_log.py: what the Python passes of the two exports (memviz_pass.build,
perfetto_pass.py), the engine's test oracles, share: the log whose pool decisions they draw (the
log itself, or the C++ replay's log of a request-only log: replayed.pool_events), and the logs
checked by the reader before the long work (tests/cli/perfetto_agree.sh, memviz_agree.sh); the
command line runs the analysis engine instead (it checks, reads and replays the logs itself).

Not here: ExportError (cudapool_analysis/export.py), what either export writes, the wall clock
(cudapool_analysis/clock.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

from oracle.reader import LogError, check_logs as _check_logs

from .replayed import pool_events


def pool_log(path):
    """A context manager yielding the path of a log with pool decisions for the log at path: the
    log itself when it has them, else a replay's log of its requests (replayed.pool_events, which
    runs `cudapool-replay --write-log`; LogError when it cannot). Call check_logs() first: a
    replay takes anything for a log."""
    return pool_events(path)


def check_logs(paths):
    """The headers of the logs at paths (reader.check_log: None for a log without one), before
    any long work: LogError for the first that cannot be opened (missing, a directory, empty,
    compressed) or is not a log."""
    headers, errors = _check_logs(paths)
    if errors:
        raise LogError(errors[0])
    return headers
