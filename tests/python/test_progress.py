# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_progress.py: progress.py, the progress line of the Python passes: its text (the
same figures give the C++ side's text: tests/unit/test_log_input.cpp), drawn on a terminal only
(a pseudo-terminal here), never on a pipe or with ENABLED off (--quiet), redrawn in place and
cleared at the end; Counted, which counts a plain file's bytes and lines for it and numbers the
passes."""

import io
import os
import pty

import pytest

from cudapool_analysis import progress


def test_text_is_the_cxx_sides():
    assert progress.progress_text("run.jsonl.zst", 32715571, 88604672, 327680000, True, 1730000,
                                  0.8439) == ("run.jsonl.zst: 36% (31.2 MiB of 84.5 MiB; 312.5 MiB "
                                              "decoded), 1.73 M events, 2.05 M events/s, 0:01 left")
    assert progress.progress_text("<stdin>", 1000, 0, 1000, False, 12, 0) == \
        "<stdin>: 1000 B, 12 events"
    assert progress.progress_text("<stdin>", 1000, 0, 5 << 20, True, 12345, 2) == \
        "<stdin>: 1000 B (5.0 MiB decoded), 12.3 k events, 6.2 k events/s"
    assert progress.progress_text("a\\x1b[2Jb", 1000, 4000, 1000, False, 4200000000, 3600) == \
        "a\\x1b[2Jb: 25% (1000 B of 3.9 KiB), 4.20 G events, 1.17 M events/s, 3:00:00 left"


def test_units():
    assert progress.bytes_text(1023) == "1023 B"
    assert progress.bytes_text(1024) == "1.0 KiB"
    assert progress.bytes_text(5 << 40) == "5.0 TiB"
    assert progress.count_text(999) == "999"
    assert progress.duration_text(59.4) == "0:59"
    assert progress.duration_text(3661) == "1:01:01"


class Stderr:
    """File descriptor 2 replaced by a pseudo-terminal or a pipe; what was written to it."""

    def __init__(self, terminal):
        self.terminal = terminal

    def __enter__(self):
        if self.terminal:
            self.read_end, self.write_end = pty.openpty()
        else:
            self.read_end, self.write_end = os.pipe()
        self.saved = os.dup(2)
        os.dup2(self.write_end, 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        os.close(self.write_end)
        os.set_blocking(self.read_end, False)
        self.text = b""
        try:
            while True:
                chunk = os.read(self.read_end, 65536)
                if not chunk:
                    break
                self.text += chunk
        except (BlockingIOError, OSError):
            pass
        os.close(self.read_end)


@pytest.fixture
def enabled(monkeypatch):
    monkeypatch.setattr(progress, "ENABLED", True)
    monkeypatch.setattr(progress, "REDRAW", 0)      # every update draws


def test_drawn_on_a_terminal_and_cleared(enabled):
    with Stderr(terminal=True) as err:
        line = progress.Line("run.jsonl")
        assert line.on
        line.update(100, 400, 100, False, 3)
        line.update(200, 400, 200, False, 6)
        line.clear()
        line.update(300, 400, 300, False, 9)       # after clear(): nothing more
    text = err.text.decode()
    assert text.count("\r") == 3
    assert "\rrun.jsonl: 25% (100 B of 400 B), 3 events" in text
    assert "\rrun.jsonl: 50% (200 B of 400 B), 6 events" in text
    assert text.endswith("\r\x1b[K")
    assert "75%" not in text


def test_not_drawn_on_a_pipe_or_when_quiet(enabled, monkeypatch):
    with Stderr(terminal=False) as err:
        line = progress.Line("run.jsonl")
        line.update(100, 400, 100, False, 3)
        line.clear()
    assert not line.on and err.text == b""
    monkeypatch.setattr(progress, "ENABLED", False)
    with Stderr(terminal=True) as err:
        line = progress.Line("run.jsonl")
        line.update(100, 400, 100, False, 3)
        line.clear()
    assert not line.on and err.text == b""


def test_counted_counts_and_numbers_passes(enabled, tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"a\nbb\nccc\n" * 1000)
    with Stderr(terminal=True) as err:
        f = io.BufferedReader(progress.Counted(io.FileIO(str(path)), "log", 9000), 64)
        assert f.read() == b"a\nbb\nccc\n" * 1000
        assert f.raw.events == 3000 and f.raw.read_bytes == 9000
        f.seek(0)
        assert f.readline() == b"a\n"
        f.close()
    text = err.text.decode()
    assert "\rlog: 100% (8.8 KiB of 8.8 KiB), 3.0 k events" in text
    assert "\rlog (pass 2): " in text
    assert text.endswith("\r\x1b[K")
