"""cudapool_analysis/inputs.py: opening a log named on the command line, for every command that
reads logs (report, report --html, export, and the replay of a log of requests only):

    open_log(path)       a binary file object at the log's start; LogError with a clear message
                         (missing, a directory, empty, a compressed file)
    display_name(path)   the name shown for it: "<stdin>" for -, else escaped for a terminal
                         (terminal.py: bytes that are not UTF-8 as \\xNN, controls escaped)

Each input is read from where it comes from once: a regular file is simply opened again for each
pass over it; anything else (- for stdin, a FIFO, /dev/stdin, a character device) is copied, at
its first open, into a private temporary file without a name (tempfile.TemporaryFile: O_TMPFILE,
or unlinked at once; so nothing outlives the process, SIGKILL included), and every later open of
the same name in the process reads that copy from its start (through /proc/self/fd). A line
longer than jsonline.MAX_LINE is copied cut to MAX_LINE + 1 bytes: still over the limit for every
reader (the same line number, the same problem), and an endless line (/dev/zero) takes bounded
disk space.

A gzip, zstd, xz or bzip2 file is recognised by its first bytes and refused with what to do.

Not here: what a line is (jsonline.py, reader.py), the checks of a log's content (reader.py).
"""

import os
import stat
import sys
import tempfile

from .jsonline import MAX_LINE
from .terminal import escape

_CHUNK = 1 << 20          # below MAX_LINE: only the line a chunk starts in can be over it
_copies = {}              # name -> the private copy of an input that is not a regular file
COMPRESSED = ((b"\x1f\x8b", "gzip", "zcat"), (b"\x28\xb5\x2f\xfd", "zstd", "zstdcat"),
              (b"\xfd7zXZ\x00", "xz", "xzcat"), (b"BZh", "bzip2", "bzcat"))


class LogError(Exception):
    """A log that cannot be read at all; the message names it and says why."""


def display_name(path):
    """The name of an input as messages and pages show it: "<stdin>" for -, else the name escaped
    by terminal.py's rule (a file name's bytes that are not UTF-8, which Python decodes from argv
    with surrogateescape, as \\xNN; a control character as its escape), so that no name acts on a
    terminal."""
    if path == "-":
        return "<stdin>"
    return escape(os.fsdecode(path))


def open_log(path):
    """The log at path (- for stdin), opened for reading in binary from its start. Raises
    LogError with a clear message when it cannot be read: missing, not permitted, a directory,
    empty, compressed. An input that is not a regular file is copied once (module docstring)."""
    name = display_name(path)
    copy = _copies.get(path)
    if copy is not None:
        return _reopen(copy)
    if path == "-":
        return _copied(path, sys.stdin.buffer, name)
    try:
        f = open(path, "rb")
    except IsADirectoryError:
        raise LogError("%s is a directory, not a log" % name) from None
    except OSError as e:
        raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
    try:
        st = os.fstat(f.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise LogError("%s is a directory, not a log" % name)
        if not stat.S_ISREG(st.st_mode):
            with f:
                return _copied(path, f, name)
        if st.st_size == 0:
            raise LogError("%s is empty: not a log (a log has a header line)" % name)
        check_not_compressed(f.read(8), name)
        f.seek(0)
    except OSError as e:
        f.close()
        raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
    except BaseException:
        f.close()
        raise
    return f


def check_not_compressed(first, name):
    """Raises LogError when the first bytes of an input are a compressed file's."""
    for magic, what, cat in COMPRESSED:
        if first.startswith(magic):
            how = ("... | %s | cudapool report -" % cat if name == "<stdin>" else
                   "%s %s | cudapool report -`, or `%s %s > LOG" % (cat, name, cat, name))
            raise LogError("%s is a %s file, not a log: decompress it first (`%s`)"
                           % (name, what, how))


def _copied(path, src, name):
    """Copies src (read once, to its end) into a private temporary file kept as path's copy;
    returns the copy opened from its start."""
    try:
        copy = tempfile.TemporaryFile()
    except OSError as e:
        raise LogError("cannot copy %s to a temporary file (%s): %s"
                       % (name, tempfile.gettempdir(), e.strerror or e)) from None
    try:
        kept = 0            # bytes of the line in progress (without its newline) seen so far
        first = True
        read = getattr(src, "read1", src.read)
        while True:
            try:
                chunk = read(_CHUNK)
            except OSError as e:
                raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
            if not chunk:
                break
            if first:
                check_not_compressed(chunk, name)   # a short first read only misses the check
                first = False
            nl = chunk.find(b"\n")
            head = len(chunk) if nl < 0 else nl     # what continues the line in progress
            if kept + head <= MAX_LINE + 1:
                copy.write(chunk)
            else:
                copy.write(chunk[:max(0, MAX_LINE + 1 - kept)])
                if nl >= 0:
                    copy.write(chunk[nl:])
            kept = kept + head if nl < 0 else len(chunk) - chunk.rfind(b"\n") - 1
        copy.flush()
    except OSError as e:
        copy.close()
        raise LogError("cannot copy %s to a temporary file (%s): %s"
                       % (name, tempfile.gettempdir(), e.strerror or e)) from None
    except BaseException:
        copy.close()
        raise
    if copy.tell() == 0:
        copy.close()
        raise LogError("%s is empty: not a log (a log has a header line)" % name)
    _copies[path] = copy
    return _reopen(copy)


def _reopen(copy):
    """A new file object reading the copy from its start: its own offset where /proc is mounted,
    else a duplicate descriptor (the passes over a log are one after the other)."""
    try:
        return open("/proc/self/fd/%d" % copy.fileno(), "rb")
    except OSError:
        f = os.fdopen(os.dup(copy.fileno()), "rb")
        f.seek(0)
        return f


def tool_argument(path):
    """(the name a child process, cudapool-replay or cudapool-tune, opens the input by; the
    descriptors to hand it): the path itself, or for an input that was copied (open_log() it
    first) /dev/fd/N of the copy, N handed to the child (which opens it afresh, at its start)."""
    copy = _copies.get(path)
    if copy is None:
        return path, ()
    return "/dev/fd/%d" % copy.fileno(), (copy.fileno(),)
