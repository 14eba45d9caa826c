# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/fanout.py: one input that can be read only once (- for stdin, a FIFO,
/dev/stdin, a character device) handed to two programs at once: `report --html --tune` gives
the same log to the analysis engine and to cudapool tune, which run side by side. The input is
read here, once, by a copying thread that writes every chunk to one pipe per program (bytes only:
nothing is decoded or looked at, a compressed input passes as it is), so that nothing is kept but
the pipes' own buffers and a chunk: the slower reader sets the pace. A program that stops reading
(it refused the log, or failed) is dropped and the others are still fed.

    needs_fanout(path)      whether the input at path is one that can be read only once
    Fanout(path, name, n, draws=True)
                            opened at once (LogError: missing, not permitted); .fds[i] the read
                            end for program i (hand it over as /dev/fd/N); .start() once the
                            programs run (their read ends are then closed here); .join(), then
                            .error(): None, or why the input could not be read; .close() for
                            one never started

With a terminal on stderr the thread draws the input's progress line (progress.py: the bytes and
lines read; none for a compressed input, whose lines only its readers see), since the programs
read pipes under another name; draws=False: none (a program that reads the pipe as its stdin,
under the input's own name, draws it).

Not here: running the programs (engine.py, htmlreport.py), the copy of an input read several times
by the Python passes (inputs.py).
"""

import os
import stat
import sys
import threading

from . import progress
from .inputs import LogError, compression

CHUNK = 1 << 16


def needs_fanout(path):
    """True for - and for a path that names no regular file and no directory (a FIFO, a
    character device, /dev/stdin); a path that cannot be looked at is left to the reader (its
    message)."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


class Fanout:
    """The input at path read once into n pipes (module docstring)."""

    def __init__(self, path, name, n, draws=True):
        self.name, self.draws = name, draws
        self._error = None
        try:
            self.src = os.dup(0) if path == "-" else os.open(path, os.O_RDONLY)
        except OSError as e:
            raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
        self.fds, self._sinks = [], []
        for _ in range(n):
            r, w = os.pipe()
            self.fds.append(r)
            self._sinks.append(w)
        self._thread = threading.Thread(target=self._copy, daemon=True)

    def start(self):
        """Closes the read ends here (the programs hold theirs) and starts the copying."""
        for r in self.fds:
            os.close(r)
        self._thread.start()

    def join(self):
        if self._thread.is_alive():
            self._thread.join()

    def close(self):
        """Not started (a program could not run): closes every descriptor. Started: nothing (the
        thread closes its own when the input ends or no program reads)."""
        if self._thread.ident is None and self._sinks:
            for fd in self.fds + self._sinks + [self.src]:
                os.close(fd)
            self._sinks = []

    def error(self):
        return self._error

    def _copy(self):
        line = progress.Line(self.name)
        line.on = line.on and self.draws
        read = lines = 0
        plain = None
        try:
            while self._sinks:
                try:
                    chunk = os.read(self.src, CHUNK)
                except OSError as e:
                    self._error = "cannot read %s: %s" % (self.name, e.strerror or e)
                    break
                if not chunk:
                    break
                if plain is None:
                    plain = compression(chunk) is None
                    line.on = line.on and plain     # a compressed input's lines are unknown here
                read += len(chunk)
                if line.on:
                    lines += chunk.count(b"\n")
                    line.update(read, 0, read, False, lines)
                for w in list(self._sinks):
                    if not _write_all(w, chunk):      # that program stopped reading
                        self._sinks.remove(w)
                        os.close(w)
        finally:
            line.clear()
            for w in self._sinks:
                os.close(w)
            self._sinks = []
            os.close(self.src)


def _write_all(fd, data):
    """Writes data whole to the pipe fd; False when its reader is gone."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BrokenPipeError:
            return False
        except OSError as e:
            print("cudapool report: writing a pipe failed: %s" % (e.strerror or e),
                  file=sys.stderr)
            return False
        view = view[n:]
    return True
