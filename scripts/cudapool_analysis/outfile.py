# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/outfile.py: the one rule for the files the tools write: `report --html OUT`,
`export --memory-viz OUT` and `--perfetto OUT`, `snapshot -o OUT` (docs/report.md, "The output
file"):

    check_output(out, inputs, option, force=False)
                                before anything is read: OutputRefused (a usage error, exit 2),
                                OutputExists (an OutputError, exit 1)
    with write_output(out, "wb" or "w", force=False) as f:
        ...                     OUT appears whole, or not at all (OutputError, OutputExists)

- Never over one of the inputs: the same file (device and inode, whatever the names or links;
  - compared with what stdin is), nor over a cudapool log, whatever its name: a regular file
  whose first line is a JSON object that is a log's header, event or summary line;
  the message says which argument looks like a forgotten output name.
- An existing file that is neither (an earlier page or export; a symbolic link at OUT, even one
  to nothing) is kept: OutputExists, "OUT exists: give --force to replace it" (a problem, exit 1,
  as a log never overwrites a file: log/file.cpp). With force=True (the commands' --force) it is
  replaced, a symbolic link replaced and not followed. The rule holds to the end: without force
  the finished file takes OUT's name only if OUT is still free then (a hard link, never a rename
  over a file that appeared during the work).
- An existing character device or FIFO (/dev/null, a named pipe) is written as it is (a FIFO
  without a reader is an error, not a wait), as log/file.cpp treats the log's destinations.
  Anything else (a directory, a socket) is refused, and nothing is created in /dev.
- A new or replaced file is written first into a temporary file without a name in OUT's
  directory (tempfile.TemporaryFile), then, whole, copied into a new private file there
  (tempfile.mkstemp: a new name, never through a link planted there; mode 0600, less what the
  umask removes), fsynced, and renamed to OUT. A failure, an interrupt or SIGTERM/SIGHUP (cli.main
  turns them into an exit) leaves OUT as it was and nothing else; only a SIGKILL during that last
  copy (a moment, not the long work) can leave the hidden .OUT.XXXXXXXX.tmp behind.

Not here: what is written (htmlreport.py, memviz_snapshot.py, perfetto.py), opening inputs
(inputs.py).
"""

import contextlib
import errno
import fcntl
import io
import os
import shutil
import stat
import tempfile

from .inputs import display_name
from .jsonline import BOM, CAREFUL, MAX_LINE

LOG_SCHEMA_PREFIX = "cudapool.log/"
_PEEK = 64 << 10


class OutputRefused(Exception):
    """OUT names a file that must not be written (an input, a log, a directory): a usage error."""


class OutputError(Exception):
    """OUT cannot be written; the message says why."""


class OutputExists(OutputError):
    """OUT names an existing file and force was not given (--force): a problem, exit 1."""


def exists_message(out):
    return "%s exists: give --force to replace it" % display_name(out)


def check_output(out, inputs, option, force=False):
    """Raises OutputRefused when the output `option OUT` must not be written: an input (the same
    file), a cudapool log, a directory or another file that is neither regular nor a character
    device or FIFO, or a new name in /dev; then, without force, OutputExists when OUT is an
    existing file or symbolic link (a character device or FIFO is written as it is). inputs: the
    log names given (- for stdin)."""
    shown = "%s %s" % (option, display_name(out))
    if not out:
        raise OutputRefused("%s: the output name is empty" % option)
    try:
        st = os.stat(out)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputRefused("%s: %s" % (shown, e.strerror or e)) from None
    if st is None or stat.S_ISREG(st.st_mode):
        if in_dev(out):
            raise OutputRefused("%s: nothing is created in /dev (an existing character device "
                                "or FIFO there is written as it is)" % shown)
    if st is None:
        if not force and os.path.islink(out):
            raise OutputExists(exists_message(out))   # a link to nothing is a name taken too
        return
    if stat.S_ISDIR(st.st_mode):
        raise OutputRefused("%s is a directory: name the file to write" % shown)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        raise OutputRefused("%s is neither a regular file nor a character device or FIFO: "
                            "nothing written" % shown)
    for path in inputs:
        if same_file(st, path):
            raise OutputRefused("%s is the input %s (the same file): nothing written; name "
                                "another file to write" % (shown, display_name(path)))
    if stat.S_ISREG(st.st_mode) and is_a_log(out):
        raise OutputRefused("%s is a cudapool log, not an output: nothing written; was the "
                            "output name forgotten? (%s OUT %s ...)"
                            % (shown, option, display_name(out)))
    if not force and (stat.S_ISREG(st.st_mode) or os.path.islink(out)):
        raise OutputExists(exists_message(out))


def in_dev(out):
    """Whether OUT's directory, resolved, is /dev or below it (/dev/shm aside)."""
    d = os.path.realpath(os.path.dirname(os.path.abspath(out)))
    return (d == "/dev" or d.startswith("/dev/")) and not (d == "/dev/shm"
                                                           or d.startswith("/dev/shm/"))


def same_file(st, path):
    try:
        other = os.fstat(0) if path == "-" else os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def is_a_log(path):
    """Whether the regular file at path is a cudapool log: its first line (after a byte order
    mark) is a JSON object with a cudapool.log/ schema (a header), or with an action (an event or
    a summary line of a log without its header)."""
    try:
        with open(path, "rb") as f:
            start = f.read(_PEEK)
            skip = len(BOM) if start.startswith(BOM) else 0
            if not start[skip:].lstrip(b" \t").startswith(b"{"):
                return False      # not even JSON: an HTML page, a pickle, text
            f.seek(skip)
            obj = CAREFUL.decode(f.readline(MAX_LINE + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):   # unreadable, not UTF-8, not JSON
        return False
    if not isinstance(obj, dict):
        return False
    schema = obj.get("schema")
    return "action" in obj or (isinstance(schema, str) and schema.startswith(LOG_SCHEMA_PREFIX))


@contextlib.contextmanager
def write_output(out, mode="wb", force=False):
    """A file object for OUT (binary, or UTF-8 text with mode "w"): a character device or FIFO
    is written as it is; anything else is written into a temporary file without a name in OUT's
    directory, and when the block ends without an exception copied into a new private file there
    (mkstemp), fsynced and given OUT's name: renamed over it with force, else linked to it, so
    that a file that took OUT's name meanwhile is kept (OutputExists). Call check_output() first,
    with the same force. Raises OutputError (also for an OSError of the block's writes)."""
    shown = display_name(out)
    try:
        st = os.stat(out)
    except OSError:
        st = None
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        with _as_it_is(out, shown, mode) as f:
            yield f
        return
    directory = os.path.dirname(os.path.abspath(out))
    try:
        draft = tempfile.TemporaryFile(dir=directory)    # O_TMPFILE, or unlinked at once
    except OSError as e:
        raise OutputError("cannot write %s: %s" % (shown, e.strerror or e)) from None
    f = io.TextIOWrapper(draft, encoding="utf-8") if mode == "w" else draft
    tmp = None
    try:
        try:
            yield f
            f.flush()
            draft.seek(0)
            fd, tmp = _private_file(directory, os.path.basename(out), shown)
            with os.fdopen(fd, "wb") as final:
                shutil.copyfileobj(draft, final, 1 << 20)
                final.flush()
                os.fsync(final.fileno())
            tmp = _name(tmp, out, force)
        finally:
            with contextlib.suppress(OSError):
                f.close()
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    except OSError as e:
        raise OutputError("cannot write %s: %s" % (shown, e.strerror or e)) from None
    with contextlib.suppress(OSError):   # the rename itself on disk
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _name(tmp, out, force):
    """Gives the finished file tmp the name out: renamed over whatever is there with force; else
    a hard link, which fails on a name taken (OutputExists). Returns the name left to remove
    (tmp after a link), or None. Where the file system has no hard links, a rename after a last
    look (a moment's race)."""
    if force:
        os.replace(tmp, out)
        return None
    try:
        os.link(tmp, out)
        return tmp
    except FileExistsError:
        raise OutputExists(exists_message(out)) from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK,
                           errno.EXDEV):
            raise
    if os.path.lexists(out):
        raise OutputExists(exists_message(out))
    os.rename(tmp, out)
    return None


def _file(fd, mode):
    raw = os.fdopen(fd, "wb")
    return io.TextIOWrapper(raw, encoding="utf-8") if mode == "w" else raw


def _private_file(directory, base, shown):
    """(descriptor, name) of a new private file in directory: tempfile.mkstemp (O_EXCL, never
    through a link planted there; mode 0600 less the umask)."""
    try:
        return tempfile.mkstemp(prefix="." + base[:64] + ".", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OutputError("cannot write %s: %s" % (shown, e.strerror or e)) from None


@contextlib.contextmanager
def _as_it_is(out, shown, mode):
    """A character device or FIFO, opened for writing without O_CREAT (a FIFO without a reader:
    OutputError, not a wait)."""
    try:
        fd = os.open(out, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        why = "no process reads the FIFO" if e.errno == errno.ENXIO else e.strerror or e
        raise OutputError("cannot write %s: %s" % (shown, why)) from None
    f = None
    try:
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            f = _file(fd, mode)
            yield f
            f.flush()
        finally:
            with contextlib.suppress(OSError):
                f.close() if f is not None else os.close(fd)
    except OSError as e:
        raise OutputError("cannot write %s: %s" % (shown, e.strerror or e)) from None
