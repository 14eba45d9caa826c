# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/progress.py: the progress line of a pass over a log (docs/log-format.md,
"Progress"), the one the C++ tools draw (log/read/progress.h, the same text): on stderr, only when
stderr is a terminal and the command was not given --quiet (cli.py sets ENABLED), one line
redrawn in place at most five times a second and cut to the terminal's width, with the bytes read
of the input (and decoded, for a compressed one), the events (lines) read, events per second and,
when the input's size is known, how far along and the time left; cleared at the end of the pass.

    Line(name)                 one pass's line: update(read, total, decoded, compressed, events),
                               clear()
    Counted(raw, name, total)  a plain file's raw stream that counts what passes for a Line
    progress_text(...)         the line's text

Not here: decoding (decoded.py, which keeps its own counts), opening inputs (inputs.py).
"""

import io
import os
import time

ENABLED = True           # False: --quiet
REDRAW = 0.2             # seconds between two drawings of the line
_UNITS = ("KiB", "MiB", "GiB", "TiB")


def bytes_text(n):
    """1023 B, 1.0 KiB, 312.5 MiB, 84.5 GiB."""
    if n < 1024:
        return "%d B" % n
    v, u = n / 1024, 0
    while v >= 1024 and u < 3:
        v, u = v / 1024, u + 1
    return "%.1f %s" % (v, _UNITS[u])


def count_text(n):
    """999, 12.3 k, 1.73 M, 4.20 G."""
    if n < 1000:
        return "%d" % n
    if n < 1e6:
        return "%.1f k" % (n / 1e3)
    if n < 1e9:
        return "%.2f M" % (n / 1e6)
    return "%.2f G" % (n / 1e9)


def duration_text(seconds):
    """0:42, 12:05, 1:02:09."""
    s = int(seconds + 0.5)
    if s >= 3600:
        return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60)
    return "%d:%02d" % (s // 60, s % 60)


def progress_text(name, read, total, decoded, compressed, events, seconds):
    """The line, e.g. "run.jsonl.zst: 37% (31.2 MiB of 84.5 MiB; 312.5 MiB decoded), 1.73 M
    events, 2.05 M events/s, 0:42 left". name: as messages show it (escaped); total 0: unknown."""
    decoded_text = "; %s decoded" % bytes_text(decoded) if compressed else ""
    if total > 0:
        shown = min(read, total)
        text = "%s: %d%% (%s of %s%s)" % (name, shown * 100 // total, bytes_text(shown),
                                          bytes_text(total), decoded_text)
    else:
        text = "%s: %s%s" % (name, bytes_text(read),
                             " (%s)" % decoded_text[2:] if compressed else "")
    text += ", %s events" % count_text(events)
    if seconds > 0:
        text += ", %s events/s" % count_text(events / seconds)
        if total > 0 and 0 < read < total:
            text += ", %s left" % duration_text(seconds * (total - read) / read)
    return text


def _stderr_is_terminal():
    try:
        return os.isatty(2)
    except OSError:
        return False


class Line:
    """One pass's progress line, drawn only when ENABLED and stderr is a terminal."""

    def __init__(self, name):
        self.name = name
        self.on = ENABLED and _stderr_is_terminal()
        self.start = time.monotonic()
        self.last = None

    def update(self, read, total, decoded, compressed, events):
        if not self.on:
            return
        now = time.monotonic()
        if self.last is not None and now - self.last < REDRAW:
            return
        self.last = now
        text = progress_text(self.name, read, total, decoded, compressed, events, now - self.start)
        _write("\r" + text[:_width() - 1] + "\x1b[K")

    def clear(self):
        if self.last is not None:
            _write("\r\x1b[K")
        self.on = False
        self.last = None


def _width():
    """stderr's terminal's columns (80 when it does not say)."""
    try:
        return os.get_terminal_size(2).columns or 80
    except OSError:
        return 80


def _write(text):
    try:
        os.write(2, text.encode("utf-8", "replace"))
    except OSError:
        pass


class Counted(io.RawIOBase):
    """A plain file's raw stream (a FileIO) read through a progress Line: the bytes and lines that
    pass are counted. A seek to the start begins a new pass ("NAME (pass 2)"); any other seek ends
    the line (the report's look at the last line is no pass)."""

    def __init__(self, raw, name, total):
        super().__init__()
        self.raw, self.name, self.total = raw, name, total
        self.passes = 1
        self._begin()

    def _begin(self):
        self.line = Line(self.name if self.passes == 1 else "%s (pass %d)" % (self.name,
                                                                                 self.passes))
        self.read_bytes = 0
        self.events = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        n = self.raw.readinto(b)
        if n:
            self.read_bytes += n
            if self.line.on:
                with memoryview(b) as m:
                    self.events += m[:n].tobytes().count(b"\n")
                self.line.update(self.read_bytes, self.total, self.read_bytes, False, self.events)
        else:
            self.line.clear()
        return n

    def seek(self, offset, whence=io.SEEK_SET):
        self.line.clear()
        if offset == 0 and whence == io.SEEK_SET and self.read_bytes:
            self.passes += 1
            self._begin()
        else:
            self.line.on = False
        return self.raw.seek(offset, whence)

    def tell(self):
        return self.raw.tell()

    def fileno(self):
        return self.raw.fileno()

    def close(self):
        if not self.closed:
            self.line.clear()
            self.raw.close()
        super().close()
