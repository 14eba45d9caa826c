# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/decoded.py: a compressed log (gzip or zstd, recognised by its first bytes:
inputs.py) read as plain text through cudapool-cat, the C++ tools' own decoder
(log/read/input.h; found by tools.py): one decoder, with one set of messages, for every reader of
the log (the Python side cannot count on a zstd module: python3's from pyenv does not see
Debian's python3-zstandard).

    open_decoded(source, path, name, total, progress)   a binary file object of the plain bytes
    ended_early(path)          None, or what cudapool-cat said of a log that ends in the middle
                               of a frame (cut short: the log of a killed process); what the
                               replay said of it: ended_early_said(path, text)

A pass is one run of `cudapool-cat --quiet --name NAME -` whose stdin is the compressed file
itself, a descriptor of ours: its offset, which the child moves, is how far the pass has read (for
the progress line). A seek to the start runs it again: a compressed file is decoded once per pass
rather than copied decompressed to a temporary file, which would take about 20 times its size on
disk (19 GB for a 1 GB zstd log), while decoding costs far less than the parsing of each pass.
The end of a pass is cudapool-cat's exit: status 1 (corrupt data, a format it does not decode)
raises LogError with its message, which gives the byte; a note that the data ends in the middle of
a frame is kept (ended_early(); the commands say it once). Closing the file before the end (a
check that reads the header) ends the child. The last line's length, first bytes and whether a
newline ends it, which ending.py reads from the end of a plain file, are kept as a whole pass
reads them (last_line()).

Not here: which inputs are compressed and the copies of stdin and FIFOs (inputs.py), finding and
starting the tool (tools.py), the progress line's text (progress.py).
"""

import io
import os

from .inputs import LogError
from .progress import Line
from .tools import ToolError, start_tool, tool_command

PEEK = 4096              # bytes kept of the last line's start (ending.PEEK)
_PREFIX = "cudapool-cat: "
_NOTE = "note: "
_ended = {}              # path -> what cudapool-cat said of its end


def ended_early(path):
    """What cudapool-cat said of the log at path ending in the middle of a frame, or None."""
    return _ended.get(path)


def ended_early_said(path, text):
    """Keeps what another C++ tool (the replay of a log of requests only: the test
    oracle's tests/oracle/replayed.py) said of
    the log at path ending in the middle of a frame, as ended_early() gives it."""
    _ended[path] = text


class DecodedFile(io.BufferedReader):
    """The buffered file object of a DecodedLog, with last_line()."""

    def last_line(self):
        return self.raw.last_line()


def open_decoded(source, path, name, total, progress):
    """The plain bytes of the compressed file object source (at any offset: each pass starts at
    0; closed with the result), read as `path` (the key of ended_early()), named name in
    messages; total: its size for the progress line (0: unknown); progress: draw the line."""
    return DecodedFile(DecodedLog(source, path, name, total, progress), 1 << 20)


class DecodedLog(io.RawIOBase):
    """The raw stream under a DecodedFile: the output of one cudapool-cat per pass."""

    def __init__(self, source, path, name, total, progress):
        super().__init__()
        self.source, self.path, self.name, self.total = source, path, name, total
        self.progress = progress
        self.passes = 0
        self.proc = None
        self.tail = None
        self._start()

    def readable(self):
        return True

    def seekable(self):
        return True

    def _start(self):
        self._stop()
        try:
            cmd = tool_command("cudapool-cat")
        except ToolError as e:
            raise LogError("%s is compressed: reading it needs cudapool-cat, the log decoder of "
                           "the C++ tools: %s" % (self.name, e)) from None
        fd = self.source.fileno()
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            self.proc = start_tool(cmd + ["--quiet", "--name", self.name, "-"], stdin=fd)
        except OSError as e:
            raise LogError("cannot run %s to read %s: %s" % (cmd[0], self.name,
                                                             e.strerror or e)) from None
        self.passes += 1
        self.line = Line(self.name if self.passes == 1 else "%s (pass %d)" % (self.name,
                                                                                 self.passes))
        if not self.progress:
            self.line.on = False
        self.pos = 0
        self.events = 0
        self.done = False
        # The last line so far: where the line now being read starts, its first bytes; the same
        # of the line before it (the last line when the data ends with a newline).
        self.cur_start, self.cur_head = 0, b""
        self.prev_start, self.prev_head = 0, b""

    def _stop(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()

    def readinto(self, b):
        if self.done:
            return 0
        n = self.proc.stdout.readinto(b)
        if not n:
            self._finish()
            return 0
        with memoryview(b) as m:
            chunk = m[:n].tobytes()
        self._track(chunk)
        if self.line.on:
            self.events += chunk.count(b"\n")
            try:
                read = os.lseek(self.source.fileno(), 0, os.SEEK_CUR)
            except OSError:
                read = 0
            self.line.update(read, self.total, self.pos, True, self.events)
        return n

    def _track(self, chunk):
        start = self.pos
        self.pos += len(chunk)
        nl = chunk.rfind(b"\n")
        if nl < 0:
            if len(self.cur_head) < PEEK:
                self.cur_head += chunk[:PEEK - len(self.cur_head)]
            return
        before = chunk.rfind(b"\n", 0, nl)
        if before < 0:                   # the line now being read ends at nl
            if len(self.cur_head) < PEEK:
                self.cur_head += chunk[:min(nl, PEEK - len(self.cur_head))]
            self.prev_start, self.prev_head = self.cur_start, self.cur_head
        else:
            self.prev_start = start + before + 1
            self.prev_head = chunk[before + 1:min(nl, before + 1 + PEEK)]
        self.cur_start, self.cur_head = start + nl + 1, chunk[nl + 1:nl + 1 + PEEK]

    def _finish(self):
        """The end of a pass: the child's verdict."""
        self.done = True
        self.line.clear()
        err = self.proc.stderr.read()
        rc = self.proc.wait()
        said = [l[len(_PREFIX):] for l in err.decode("utf-8", "replace").splitlines()
                if l.startswith(_PREFIX)]
        if rc != 0:
            errors = [l for l in said if not l.startswith(_NOTE)]
            if errors:
                raise LogError(errors[-1])
            raise LogError("cannot read %s: cudapool-cat %s" % (
                self.name, "ended by signal %d" % -rc if rc < 0 else "failed (exit %d)" % rc))
        for line in said:
            if line.startswith(_NOTE):
                _ended[self.path] = line[len(_NOTE):]
        end = self.pos
        if end == 0:
            self.tail = None
        elif end == self.cur_start:      # a newline ends the data
            self.tail = (end - 1 - self.prev_start, self.prev_head, True)
        else:
            self.tail = (end - self.cur_start, self.cur_head, False)

    def last_line(self):
        """(its length in bytes without the newline, its first PEEK bytes, whether a newline ends
        it) of the last line, as ending.last_line() gives it, once a pass has read the whole
        log; None before, or when the log is empty."""
        return self.tail

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_CUR and offset == 0:
            return self.pos
        if offset != 0 or whence != io.SEEK_SET:
            raise io.UnsupportedOperation("a compressed log is read from its start only")
        if self.pos or self.done:
            self._start()
        return 0

    def tell(self):
        return self.pos

    def close(self):
        if not self.closed:
            try:
                if self.proc is not None:
                    self.line.clear()
                self._stop()
            finally:
                self.source.close()
        super().close()
