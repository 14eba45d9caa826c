# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_decoded.py: decoded.py, a compressed log read through cudapool-cat (the C++
decoder, from the build: CUDAPOOL_BUILD_DIR): one child per pass whose position is the pass's
progress; a log cut in the middle of a frame read to the cut and said (ended_early); corrupt data a
LogError with cudapool-cat's message, which gives the byte; the last line known from the pass as the
test oracle tests/oracle/ending.py reads it from a plain file; closing early ends the child;
cudapool-cat missing is said."""

import io

import pytest

from conftest import gzipped, write, zstded
from cudapool_analysis import decoded, inputs, progress, tools
from oracle import ending


@pytest.fixture(autouse=True)
def quiet(monkeypatch):
    monkeypatch.setattr(inputs, "_copies", {})
    monkeypatch.setattr(decoded, "_ended", {})
    monkeypatch.setattr(progress, "ENABLED", False)


@pytest.mark.parametrize("compress", [zstded, gzipped])
def test_cut_short(tmp_path, long_log_bytes, compress):
    packed = compress(long_log_bytes)           # zstd decodes a block (128 KiB) at a time
    path = write(tmp_path / "cut", packed[:len(packed) * 2 // 3])
    with inputs.open_log(path) as f:
        text = f.read()
    assert long_log_bytes.startswith(text) and 0 < len(text) < len(long_log_bytes)
    what = "zstd" if compress is zstded else "gzip"
    assert inputs.ended_early(path) == (
        "%s: the %s data ends in the middle of a frame, at byte %d: the log was cut short (a "
        "killed process, a copy in progress); every line before the cut was read"
        % (path, what, len(packed) * 2 // 3))


@pytest.mark.parametrize("compress", [zstded, gzipped])
def test_corrupt(tmp_path, log_bytes, compress):
    packed = bytearray(compress(log_bytes * 20))
    # zstd: a block in the middle; gzip: its checksum (a change in the middle of a deflate stream
    # may read as a stream that goes on past the end: a cut, as gzip -t says too)
    packed[len(packed) // 2 if compress is zstded else -6] ^= 0x5A
    path = write(tmp_path / "bad", bytes(packed))
    with pytest.raises(inputs.LogError) as e:
        with inputs.open_log(path) as f:
            while f.read(65536):
                pass
    what = "zstd" if compress is zstded else "gzip"
    assert str(e.value).startswith("%s: corrupt %s data, found " % (path, what))
    assert str(e.value).endswith("): the log cannot be read past it")
    assert inputs.ended_early(path) is None


@pytest.mark.parametrize("ending_bytes", [b"", b"\n", b"{\"action\":\"summary\"" + b"x" * 5000,
                                          b"{\"action\":\"summary\"" + b"x" * 5000 + b"\n"])
def test_last_line_as_ending_reads_it(tmp_path, log_bytes, ending_bytes):
    data = log_bytes + ending_bytes
    plain = write(tmp_path / "plain", data)
    packed = write(tmp_path / "packed", zstded(data))
    with open(plain, "rb") as f:
        expected = ending.last_line(f)
    with inputs.open_log(packed) as f:
        assert f.read() == data
        assert ending.last_line(f) == expected


def test_tiny_chunks_keep_the_last_line(tmp_path):
    """_track() across chunk edges: lines longer and shorter than a chunk."""
    data = b"a\n" + b"b" * 10 + b"\n" + b"c" * 7
    log = decoded.DecodedLog.__new__(decoded.DecodedLog)
    for size in range(1, len(data) + 1):
        log.pos = 0
        log.cur_start, log.cur_head, log.prev_start, log.prev_head = 0, b"", 0, b""
        for i in range(0, len(data), size):
            log._track(data[i:i + size])
        assert (log.cur_start, log.cur_head, log.prev_start, log.prev_head) == \
            (13, b"c" * 7, 2, b"b" * 10), size


def test_one_child_per_pass_ended_when_closed_early(tmp_path, log_bytes):
    path = write(tmp_path / "run.zst", zstded(log_bytes * 50))
    f = inputs.open_log(path)
    first = f.raw.proc
    assert f.readline().startswith(b"{")
    f.seek(0)                                         # inside the buffer: nothing to run again
    assert f.raw.proc is first
    assert f.read(3 << 20) == log_bytes * 50
    f.seek(0)
    second = f.raw.proc
    assert second is not first and first.returncode is not None
    assert f.raw.passes == 2
    f.close()
    assert second.returncode is not None              # ended, and waited for


def test_the_decoder_missing_is_said(tmp_path, log_bytes, monkeypatch):
    def missing(name):
        raise tools.ToolError("%s not found: build it" % name)
    monkeypatch.setattr(decoded, "tool_command", missing)
    path = write(tmp_path / "run.zst", zstded(log_bytes))
    with pytest.raises(inputs.LogError) as e:
        inputs.open_log(path)
    assert str(e.value) == ("%s is compressed: reading it needs cudapool-cat, the log decoder of "
                            "the C++ tools: cudapool-cat not found: build it" % path)
