# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_frames.py: frames.py's naming rule with symbols (what a library's own file
says of a frame: the engine's table, engine_symbols, or the oracle's eu-addr2line,
tests/oracle/symbols.py): the page's text and memory_viz's frame of a symbolized frame, of one with
a line and no symbol, and the earlier rules when symbols has nothing (library + offset, a leak's
symbol); and the oracle's symbolizer on this test's own interpreter: a module whose build id is
not the file's, or that has none, or whose path is no regular file, is never read. No C++ tool
needed (eu-addr2line and eu-readelf from elfutils, when installed)."""

import os
import shutil
import subprocess
import sys

import pytest

from cudapool_analysis.frames import Frames, engine_symbols
from oracle import symbols as oracle_symbols

SUMMARY = {"modules": [
    {"base": "0x1000", "end": "0x2000", "path": "/lib/libfoo.so", "bias": "0x1000",
     "build_id": "ab"},
    {"base": "0x3000", "end": "0x4000", "path": "/lib/libbar.so"}],
    "leaks": [{"backtrace": ["0x3010 /lib/libbar.so(bar_leak+0x10)"]}]}


def test_symbolized_frames():
    table = {"0x1010": ["ns::do_alloc(int)", 0x13, "/src/foo.cpp", 42],
             "0x1020": ["", 0, "/src/foo.cpp", 7]}
    f = Frames(SUMMARY, engine_symbols(table))
    assert f.text("0x1010") == "0x1010 libfoo.so(ns::do_alloc(int)+0x13) at foo.cpp:42"
    assert f.memviz("0x1010") == {"name": "ns::do_alloc(int)", "filename": "/src/foo.cpp",
                                  "line": 42}
    assert f.text("0x1020") == "0x1020 libfoo.so+0x20 at foo.cpp:7"
    assert f.memviz("0x1020") == {"name": "libfoo.so+0x20", "filename": "/src/foo.cpp",
                                  "line": 7}
    # Not in the table: library + offset, and the leak's symbol, as before.
    assert f.text("0x1030") == "0x1030 libfoo.so+0x30"
    assert f.text("0x3010") == "0x3010 libbar.so(bar_leak+0x10)"
    assert Frames(SUMMARY).text("0x1010") == "0x1010 libfoo.so+0x10"


def test_symbols_see_the_module():
    seen = []
    Frames(SUMMARY, lambda frame, a, m: seen.append((frame, a, m))).text("0x1010")
    assert seen == [("0x1010", 0x1010, (0x1000, 0x2000, "/lib/libfoo.so", 0x1000, "ab"))]


needs_elfutils = pytest.mark.skipif(not shutil.which("eu-addr2line") or
                                    not shutil.which("eu-readelf"), reason="no elfutils")


@needs_elfutils
def test_oracle_reads_only_the_same_build():
    exe = os.path.realpath(sys.executable)
    build_id = oracle_symbols.build_id(exe)
    if not build_id:
        pytest.skip("the interpreter has no build id")
    nm = subprocess.run(["nm", "-D", "--defined-only", exe], capture_output=True,
                        text=True).stdout.split()
    if "Py_Main" not in nm:
        pytest.skip("no dynamic Py_Main")
    start = int(nm[nm.index("Py_Main") - 2], 16)
    mod = (0x10000, 0x7fffffffffff, exe, 0, build_id)
    got = oracle_symbols.Addr2Line(enabled=True)(None, start + 5, mod)
    assert got is not None and got[0] == "Py_Main" and got[1] == 5
    for other in ((0x10000, 0x7fffffffffff, exe, 0, "00" * 20),
                  (0x10000, 0x7fffffffffff, exe, 0, ""),
                  (0x10000, 0x7fffffffffff, "/dev/zero", 0, build_id),
                  (0x10000, 0x7fffffffffff, "/proc/self/exe", 0, build_id)):
        assert oracle_symbols.Addr2Line(enabled=True)(None, start + 5, other) is None
