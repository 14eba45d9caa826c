# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/inputs.py: opening a log named on the command line, for every command that
reads logs (report, report --html, export, and the replay of a log of requests only):

    open_log(path)       a binary file object of the log's plain text, at its start; LogError
                         with a clear message (missing, a directory, empty)
    display_name(path)   the name shown for it: "<stdin>" for -, else escaped for a terminal
                         (terminal.py: bytes that are not UTF-8 as \\xNN, controls escaped)
    ended_early(path)    None, or what to say of a compressed log that ends in the middle of a
                         frame (decoded.py)

Each input is read from where it comes from once: a regular file is simply opened again for each
pass over it; anything else (- for stdin, a FIFO, /dev/stdin, a character device) is copied, at
its first open, into a private temporary file without a name (tempfile.TemporaryFile: O_TMPFILE,
or unlinked at once; so nothing outlives the process, SIGKILL included), and every later open of
the same name in the process reads that copy from its start (through /proc/self/fd). A line
longer than jsonline.MAX_LINE is copied cut to MAX_LINE + 1 bytes: still over the limit for every
reader (the same line number, the same problem), and an endless line (/dev/zero) takes bounded
disk space.

A compressed log is recognised by its first bytes, whatever its name (the formats of
log_schema.json's "compressions", vocabulary.COMPRESSIONS): it is read through cudapool-cat, the
C++ tools' decoder, once per pass (decoded.py: gzip and zstd decoded, xz and bzip2 refused with
what to do, corrupt data named with its byte). A compressed input from stdin or a FIFO is copied
as it comes (compressed: the line limit is the plain text's), and each pass decodes the copy.
While a pass reads, the progress line (progress.py) when stderr is a terminal; open_log(path,
progress=False) for the short looks at a log's first lines.

Not here: what a line is (jsonline.py; the engine), the checks of a log's content (the engine).
"""

import io
import os
import stat
import sys
import tempfile

from . import progress as _progress
from .jsonline import MAX_LINE
from .terminal import escape
from .vocabulary import COMPRESSIONS

_CHUNK = 1 << 20          # below MAX_LINE: only the line a chunk starts in can be over it
_SNIFF = max(len(c.magic) for c in COMPRESSIONS)   # the first bytes that tell a format
_copies = {}              # name -> the private copy of an input that is not a regular file
_labels = {}              # name -> what its progress line calls it (label())


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


def open_log(path, progress=True):
    """The log at path (- for stdin), opened for reading in binary from its start, its plain
    text (a compressed log decoded: decoded.py). Raises LogError with a clear message when it
    cannot be read: missing, not permitted, a directory, empty (a compressed log that cannot be
    decoded raises it while it is read). An input that is not a regular file is copied once
    (module docstring). progress: draw the progress line of this pass (progress.py)."""
    name = display_name(path)
    copy = _copies.get(path)
    if copy is not None:
        return _opened(path, _reopen(copy), name, progress)
    if path == "-":
        return _opened(path, _copied(path, sys.stdin.buffer, name), name, progress)
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
                copied = _copied(path, f, name)
            return _opened(path, copied, name, progress)
        if st.st_size == 0:
            raise LogError("%s is empty: not a log (a log has a header line)" % name)
    except OSError as e:
        f.close()
        raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
    except BaseException:
        f.close()
        raise
    return _opened(path, f, name, progress)


def label(path, text):
    """Calls the input at path `text` in its progress line (a replay's log by the log's name)."""
    _labels[path] = text


def compression(first):
    """The vocabulary.COMPRESSIONS entry whose magic the bytes first start with, or None (plain
    text)."""
    for c in COMPRESSIONS:
        if first.startswith(c.magic):
            return c
    return None


def ended_early(path):
    """None, or what cudapool-cat said of the compressed log at path ending in the middle of a
    frame, once a pass has read it to its end (decoded.py)."""
    from .decoded import ended_early as said
    return said(path)


def _opened(path, f, name, progress):
    """f, a regular file's binary file object at its start (closed with the result, or on an
    error), as the reader takes it: decoded when compressed; counted for the progress line when
    it is drawn."""
    try:
        first = f.read(_SNIFF)
        f.seek(0)
        size = os.fstat(f.fileno()).st_size
    except OSError as e:
        f.close()
        raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
    try:
        if compression(first) is not None:
            from .decoded import open_decoded
            return open_decoded(f, path, name, size, progress)
        if progress and _progress.ENABLED and _progress.Line(name).on:
            raw = f.detach()
            raw.seek(0)
            return io.BufferedReader(_progress.Counted(raw, _labels.get(path, name), size),
                                     _CHUNK)
    except BaseException:
        f.close()
        raise
    return f


def _copied(path, src, name):
    """Copies src (read once, to its end) into a private temporary file kept as path's copy;
    returns the copy opened from its start. Plain text is copied with every line cut to
    MAX_LINE + 1 bytes; a compressed input (its first bytes) as it comes."""
    try:
        copy = tempfile.TemporaryFile()
    except OSError as e:
        raise LogError("cannot copy %s to a temporary file (%s): %s"
                       % (name, tempfile.gettempdir(), e.strerror or e)) from None
    try:
        read = getattr(src, "read1", src.read)

        def chunks():
            while True:
                try:
                    chunk = read(_CHUNK)
                except OSError as e:
                    raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
                if not chunk:
                    return
                yield chunk

        pieces = chunks()
        first = b""
        for chunk in pieces:          # the first bytes, enough of them to tell a format
            first += chunk
            if len(first) >= _SNIFF:
                break
        if compression(first) is not None:
            copy.write(first)
            for chunk in pieces:
                copy.write(chunk)
        else:
            kept = 0        # bytes of the line in progress (without its newline) seen so far
            for chunk in _chain(first, pieces):
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


def _chain(first, rest):
    if first:
        yield first
    yield from rest


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
