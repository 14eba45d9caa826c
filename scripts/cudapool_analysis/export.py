"""cudapool_analysis/export.py: what the two exports (`cudapool export --memory-viz`, memviz.py;
`--perfetto`, perfetto.py; docs/exports.md) share: the log whose pool decisions they draw (the log
itself, or the C++ replay's log of a request-only log: replayed.pool_events), the logs checked by
the reader before the long work, and writing the output file whole or not at all (OUT.tmp, then a
rename).

Not here: what either export writes, the wall clock of a log's events (clock.py, which the HTML
page uses too), the command line (exportcli.py).
"""

import contextlib
import importlib.util
import os

from .reader import LogError, check_logs as _check_logs


class ExportError(Exception):
    """An output that cannot be written, or a log that cannot be exported; the message says why."""


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


@contextlib.contextmanager
def atomic_output(path, mode="wb"):
    """A file object writing OUT.tmp, renamed to OUT when the block ends without an exception, and
    removed when one is raised: no half-written OUT is ever left behind. ExportError when the file
    cannot be written."""
    tmp = path + ".tmp"
    try:
        f = open(tmp, mode)
    except OSError as e:
        raise ExportError("cannot write %s: %s" % (tmp, e.strerror or e)) from None
    try:
        yield f
    except BaseException:
        f.close()
        _remove(tmp)
        raise
    try:
        f.close()
        os.replace(tmp, path)
    except OSError as e:
        _remove(tmp)
        raise ExportError("cannot write %s: %s" % (path, e.strerror or e)) from None


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


__all__ = ["ExportError", "LogError", "pool_log", "check_logs", "atomic_output"]
