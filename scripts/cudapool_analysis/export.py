"""cudapool_analysis/export.py: what the two exports (`cudapool export --memory-viz`, memviz.py;
`--perfetto`, perfetto.py; docs/exports.md) share: the log whose pool decisions they draw (the log
itself, or the C++ replay's log of a request-only log: replayed.pool_events), the logs' headers
read before the long work, and writing the output file whole or not at all (OUT.tmp, then a
rename).

Not here: what either export writes, the wall clock of a log's events (clock.py, which the HTML
page uses too), the command line (exportcli.py).
"""

import contextlib
import importlib.util
import os

from .reader import LogError


class ExportError(Exception):
    """An output that cannot be written, or a log that cannot be exported; the message says why."""


def log_header(path):
    """The header of the log at path (None when it has none), read from its first lines; raises
    LogError when the file cannot be read or none of its lines is a header, an event or a summary
    (checked before a replay, which would make an empty log of anything)."""
    from .reader import LogReader, open_log
    try:
        with open_log(path) as f:
            reader = LogReader(f)
            for _ in reader:
                break
    except OSError as e:
        raise LogError("cannot read %s: %s" % (path, e.strerror or e)) from None
    if reader.header is None and reader.events == 0 and reader.summary is None:
        raise LogError("%s is not a cudapool log: none of its %d lines is a header, an event or "
                       "a summary" % (path, reader.lines))
    return reader.header


def pool_log(path):
    """A context manager yielding the path of a log with pool decisions for the log at path: the
    log itself when it has them, else a replay's log of its requests (replayed.pool_events, which
    runs `cudapool-replay --write-log`; LogError when it cannot). Without replayed.py the log
    itself. Call log_header(path) first: a replay takes anything for a log."""
    if importlib.util.find_spec(__package__ + ".replayed") is None:
        return contextlib.nullcontext(path)
    from .replayed import pool_events
    return pool_events(path)


def check_logs(paths):
    """The headers of the logs at paths (log_header), before any long work: LogError for the
    first that cannot be opened (missing, a directory, empty) or is not a log."""
    from .reader import open_log
    for path in paths:
        open_log(path).close()
    return [log_header(path) for path in paths]


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


__all__ = ["ExportError", "LogError", "pool_log", "log_header", "check_logs", "atomic_output"]
