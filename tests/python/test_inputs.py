# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_inputs.py: inputs.py, how every command of the package opens a log: plain,
gzip and zstd files (with a name that says so or not) give the same plain text; the formats are
the vocabulary's (log/compressions.def); xz and bzip2 are refused with what to do (the C++
decoder's words); stdin and FIFOs are copied once, a compressed one as it comes (not decompressed
to disk), plain text with its lines cut at the limit; the progress line wraps a plain file only
when it is drawn."""

import io
import os
import subprocess
import sys
import threading

import pytest

from conftest import gzipped, write, zstded
from cudapool_analysis import inputs, jsonline, progress, vocabulary


@pytest.fixture(autouse=True)
def fresh_copies(monkeypatch):
    monkeypatch.setattr(inputs, "_copies", {})
    monkeypatch.setattr(progress, "ENABLED", False)


def read(path, **kw):
    with inputs.open_log(path, **kw) as f:
        return f.read()


def test_formats_are_the_vocabularys():
    names = [c.name for c in vocabulary.COMPRESSIONS]
    assert names == ["gzip", "zstd", "xz", "bzip2"]
    for c in vocabulary.COMPRESSIONS:
        assert inputs.compression(c.magic + b"rest") is c
        assert inputs.compression(c.magic[:-1]) is None
    assert inputs.compression(b'{"schema"') is None


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz", "run.jsonl.zst", "gz-no-ext",
                                  "zst-no-ext"])
def test_every_format_reads_the_same(tmp_path, log_bytes, name):
    data = {"gz": gzipped, "zst": zstded}.get(name.split(".")[-1].split("-")[0], lambda d: d)
    path = write(tmp_path / name, data(log_bytes))
    assert read(path) == log_bytes
    with inputs.open_log(path) as f:            # the passes of a report: seek(0) and again
        first = f.read()
        f.seek(0)
        assert f.read() == first == log_bytes


@pytest.mark.parametrize("magic,what,cat", [(b"\xfd7zXZ\x00\x00\x04", "xz", "xzcat"),
                                            (b"BZh91AY&SY", "bzip2", "bzcat")])
def test_other_formats_are_refused(tmp_path, magic, what, cat):
    path = write(tmp_path / "run.log", magic)
    with pytest.raises(inputs.LogError) as e:
        read(path)
    assert str(e.value) == ("%s is compressed with %s, which the readers of the log do not "
                            "decode (they read plain, gzip and zstd logs): decompress it first "
                            "(%s %s > LOG)" % (path, what, cat, path))


def test_empty_missing_directory(tmp_path):
    with pytest.raises(inputs.LogError, match="is empty: not a log"):
        read(write(tmp_path / "empty", b""))
    with pytest.raises(inputs.LogError, match="cannot read .*missing: No such file"):
        read(str(tmp_path / "missing"))
    with pytest.raises(inputs.LogError, match="is a directory, not a log"):
        read(str(tmp_path))


def fifo_with(tmp_path, data):
    """A FIFO at tmp_path/fifo fed data once by a thread (the writer's end closes after it)."""
    path = str(tmp_path / "fifo")
    os.mkfifo(path)

    def feed():
        with open(path, "wb") as w:
            w.write(data)
    threading.Thread(target=feed, daemon=True).start()
    return path


@pytest.mark.parametrize("compress", [zstded, gzipped])
def test_a_compressed_fifo_is_copied_as_it_comes(tmp_path, log_bytes, compress):
    packed = compress(log_bytes)
    path = fifo_with(tmp_path, packed)
    assert read(path) == log_bytes                    # decoded ...
    copy = inputs._copies[path]
    copy.seek(0)
    assert copy.read() == packed                      # ... from a copy kept compressed
    assert read(path) == log_bytes                    # every later pass reads the copy
    name, fds = inputs.tool_argument(path)
    assert name == "/dev/fd/%d" % copy.fileno() and fds == (copy.fileno(),)


def test_a_plain_fifo_is_copied_with_its_lines_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_LINE", 10)
    monkeypatch.setattr(inputs, "_CHUNK", 4)          # below MAX_LINE, as the real sizes are
    path = fifo_with(tmp_path, b"short\n" + b"x" * 100 + b"\nend")
    assert read(path) == b"short\n" + b"x" * 11 + b"\nend"


def test_stdin_compressed(tmp_path, log_bytes):
    """- through a child python whose stdin is a zstd stream: its report's first pass."""
    packed = zstded(log_bytes)
    code = ("import sys; from cudapool_analysis import inputs\n"
            "with inputs.open_log('-') as f: a = f.read()\n"
            "with inputs.open_log('-') as f: b = f.read()\n"
            "sys.stdout.buffer.write(a if a == b else b'different')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(inputs.__file__)))
    out = subprocess.run([sys.executable, "-c", code], input=packed, stdout=subprocess.PIPE,
                         env=env, check=True).stdout
    assert out == log_bytes


def test_progress_wraps_a_plain_file_only_when_drawn(tmp_path, log_bytes, monkeypatch):
    path = write(tmp_path / "run.jsonl", log_bytes)
    with inputs.open_log(path) as f:
        assert isinstance(f.raw, io.FileIO)            # not a terminal: the file as it is
    monkeypatch.setattr(progress, "ENABLED", True)
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "_write", lambda text: None)
    with inputs.open_log(path) as f:
        assert isinstance(f.raw, progress.Counted)
        assert f.read() == log_bytes
    with inputs.open_log(path, progress=False) as f:
        assert isinstance(f.raw, io.FileIO)


def test_line_reader_takes_the_decoded_text(tmp_path, log_bytes):
    path = write(tmp_path / "run", zstded(log_bytes))
    with inputs.open_log(path) as f:
        lines = list(jsonline.lines_of(f))
    assert b"".join(lines) == log_bytes
