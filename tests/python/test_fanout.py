# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_fanout.py: fanout.py, one input readable once handed to two programs through
pipes: which inputs need it; both readers get every byte, in order, a compressed input as it is;
a reader that stops early is dropped and the other still gets everything (no hang: a hang guard
of 60 s on each read, far above what it takes); a path that cannot be opened is a LogError
naming it; a Fanout never started leaves no descriptor open. No C++ tool needed."""

import os
import threading

import pytest

from conftest import zstded
from cudapool_analysis import progress
from cudapool_analysis.fanout import Fanout, needs_fanout
from cudapool_analysis.inputs import LogError


@pytest.fixture(autouse=True)
def quiet(monkeypatch):
    monkeypatch.setattr(progress, "ENABLED", False)


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def drain(fd, out, stop_after=None):
    """Reads the pipe fd to its end into out (a list of chunks); with stop_after, closes it once
    that many bytes came (a program that stopped reading)."""
    got = 0
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        out.append(chunk)
        got += len(chunk)
        if stop_after is not None and got >= stop_after:
            break
    os.close(fd)


def fan_file(tmp_path, data, readers):
    """data written to a FIFO, fanned out to readers (drain arguments: stop_after or None);
    returns what each got and the Fanout."""
    fifo = tmp_path / ("fifo%d" % len(os.listdir(tmp_path)))
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(data), daemon=True)
    writer.start()
    fan = Fanout(str(fifo), "fifo", len(readers))
    fds = [os.dup(fd) for fd in fan.fds]       # the programs' read ends
    fan.start()
    outs = [[] for _ in readers]
    threads = [threading.Thread(target=drain, args=(fd, out, stop), daemon=True)
               for fd, out, stop in zip(fds, outs, readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a reader hangs"
    fan.join()
    writer.join(60)
    return [b"".join(o) for o in outs], fan


def test_which_inputs(tmp_path):
    f = tmp_path / "log.jsonl"
    f.write_bytes(b"x\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert needs_fanout("-")
    assert needs_fanout(str(fifo))
    assert needs_fanout("/dev/null")               # a character device
    assert not needs_fanout(str(f))
    assert not needs_fanout(str(tmp_path))          # a directory: the reader's message
    assert not needs_fanout(str(tmp_path / "missing"))


def test_both_get_every_byte(tmp_path, long_log_bytes):
    got, fan = fan_file(tmp_path, long_log_bytes, [None, None])
    assert got == [long_log_bytes, long_log_bytes]
    assert fan.error() is None


def test_compressed_passes_as_it_is(tmp_path, long_log_bytes):
    data = zstded(long_log_bytes)
    got, _ = fan_file(tmp_path, data, [None, None])
    assert got == [data, data]


def test_a_reader_that_stops_is_dropped(tmp_path, long_log_bytes):
    assert len(long_log_bytes) > 1 << 20           # far more than a pipe holds
    got, fan = fan_file(tmp_path, long_log_bytes, [100, None])
    assert got[1] == long_log_bytes
    assert long_log_bytes.startswith(got[0]) and len(got[0]) < len(long_log_bytes)
    assert fan.error() is None
    got, _ = fan_file(tmp_path, long_log_bytes, [None, 0])   # one that never reads
    assert got[0] == long_log_bytes


def test_missing_path(tmp_path):
    with pytest.raises(LogError, match="cannot read NAME: No such file or directory"):
        Fanout(str(tmp_path / "missing"), "NAME", 2)


def test_never_started_closes_everything(tmp_path):
    f = tmp_path / "log.jsonl"
    f.write_bytes(b"x\n")
    before = open_fds()
    fan = Fanout(str(f), "log", 2)
    assert len(open_fds()) == len(before) + 5      # the input, two pipes
    fan.close()
    assert open_fds() == before
