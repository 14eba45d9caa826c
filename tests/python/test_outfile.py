# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_outfile.py: outfile.py's rule for an OUT that exists (issue 29): kept unless
force is given (check_output and write_output raise OutputExists, an OutputError, with "OUT
exists: give --force to replace it"), a symbolic link counted as a name taken even when it points
nowhere, replaced with force (the link itself, not its target); a file that takes OUT's name
during the work is kept too (write_output links, never renames over it), and no temporary file is
left behind; a FIFO is written as it is without force. Not here: the refusals that are usage
errors (tests/cli/output_rule.sh), the commands' --force (tests/cli/output_force.sh).
"""

import os
import stat

import pytest

import conftest  # noqa: F401  (the package on sys.path)
from cudapool_analysis import outfile
from cudapool_analysis.outfile import OutputError, OutputExists, check_output, write_output


def leftovers(d, name):
    return [x for x in os.listdir(d) if x.startswith("." + name) and x.endswith(".tmp")]


def test_a_new_name_is_written(tmp_path):
    out = str(tmp_path / "trace.json")
    check_output(out, [], "--perfetto")
    with write_output(out, "w") as f:
        f.write("new")
    assert open(out).read() == "new"
    assert oct(os.stat(out).st_mode & 0o777) == oct(0o600 & ~current_umask())
    assert leftovers(str(tmp_path), "trace.json") == []


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_existing_file_is_kept_without_force(tmp_path):
    out = tmp_path / "page.html"
    out.write_text("earlier")
    with pytest.raises(OutputExists) as e:
        check_output(str(out), [], "--html")
    assert str(e.value) == "%s exists: give --force to replace it" % out
    assert isinstance(e.value, OutputError)          # the commands' exit 1, not a usage error
    assert not isinstance(e.value, outfile.OutputRefused)
    with pytest.raises(OutputExists):
        with write_output(str(out), "w") as f:
            f.write("later")
    assert out.read_text() == "earlier"
    assert leftovers(str(tmp_path), "page.html") == []


def test_force_replaces_it(tmp_path):
    out = tmp_path / "page.html"
    out.write_text("earlier")
    check_output(str(out), [], "--html", force=True)
    with write_output(str(out), "w", force=True) as f:
        f.write("later")
    assert out.read_text() == "later"
    assert leftovers(str(tmp_path), "page.html") == []


def test_a_symbolic_link_is_a_name_taken_and_force_replaces_the_link(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    with pytest.raises(OutputExists):
        check_output(str(link), [], "--perfetto")
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nothing")
    with pytest.raises(OutputExists):
        check_output(str(dangling), [], "--perfetto")
    check_output(str(link), [], "--perfetto", force=True)
    with write_output(str(link), "w", force=True) as f:
        f.write("new")
    assert not link.is_symlink() and link.read_text() == "new"
    assert target.read_text() == "keep me"       # replaced, not followed


def test_a_file_that_appears_during_the_work_is_kept(tmp_path):
    out = tmp_path / "snap.pickle"
    check_output(str(out), [], "-o")             # free when checked
    with pytest.raises(OutputExists):
        with write_output(str(out)) as f:
            f.write(b"ours")
            out.write_bytes(b"theirs")           # another process took the name meanwhile
    assert out.read_bytes() == b"theirs"
    assert leftovers(str(tmp_path), "snap.pickle") == []


def test_without_hard_links_a_last_look_then_a_rename(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(outfile.errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(outfile.os, "link", no_links)
    out = tmp_path / "a.json"
    with write_output(str(out), "w") as f:
        f.write("x")
    assert out.read_text() == "x"
    with pytest.raises(OutputExists):
        with write_output(str(out), "w") as f:
            f.write("y")
    assert out.read_text() == "x"
    assert leftovers(str(tmp_path), "a.json") == []


def test_a_fifo_is_written_as_it_is_without_force(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # a reader there before the write
    try:
        check_output(fifo, [], "--perfetto")
        with write_output(fifo, "wb") as f:
            f.write(b"through")                  # fits the pipe's buffer
        assert os.read(reader, 100) == b"through"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    check_output(os.devnull, [], "--perfetto")   # a character device: no --force needed
