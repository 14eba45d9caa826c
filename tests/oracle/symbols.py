# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/symbols.py: the test oracle's symbolizer of native frames, the engine's
(tools/analyze/symbolizer.h: libdw in the engine's process) done another way: elfutils' programs,
eu-readelf -n for a file's GNU build id and eu-addr2line -S -C for the symbol and source line of an
address. The same rule: a module is read only when the log gives its build_id, the file at its path
is a regular file (not under /proc or /sys) and has that build id; the lookup is of the return
address less 1 in the file's addresses (less the module's bias), the offset is the return
address's; names cut to printable ASCII, at most MAX_SYMBOL_TEXT characters.

    frames.Frames(summary, symbols=Addr2Line())    # what frames.Frames takes as symbols

Whether the engine symbolizes at all: it does when it was built with libdw (the build's
CMakeCache.txt under $CUDAPOOL_BUILD_DIR says CUDAPOOL_LIBDW_FOUND); without a build directory,
when eu-addr2line is there. No debuginfod server is asked (DEBUGINFOD_URLS cleared, as the engine
does).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import os
import shutil
import stat
import subprocess

MAX_SYMBOL_TEXT = 1024      # symbolizer.h kMaxSymbolText
ENV = {k: x for k, x in os.environ.items() if k != "DEBUGINFOD_URLS"}
ENV["LC_ALL"] = "C"


def engine_symbolizes():
    """Whether the engine this test runs was built with libdw."""
    build = os.environ.get("CUDAPOOL_BUILD_DIR")
    cache = os.path.join(build, "CMakeCache.txt") if build else None
    if cache and os.path.isfile(cache):
        with open(cache, errors="replace") as f:
            return any(line.startswith("CUDAPOOL_LIBDW_FOUND:") and line.strip().endswith("=1")
                       for line in f)
    return shutil.which("eu-addr2line") is not None


def printable(text):
    return "".join(c if " " <= c <= "~" else "?" for c in text)[:MAX_SYMBOL_TEXT]


def regular_file(path):
    """Whether path names a regular file the engine would open."""
    if not path.startswith("/"):
        return False
    real = os.path.realpath(path)
    if real.startswith(("/proc/", "/sys/")):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def build_id(path):
    """The GNU build id of the ELF file at path (eu-readelf -n), or None."""
    out = subprocess.run(["eu-readelf", "-n", path], capture_output=True, env=ENV).stdout
    for line in out.decode("latin-1").splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:", 1)[1].strip().lower()
    return None


def source(text):
    """(file, line) of eu-addr2line's "FILE:LINE[:COLUMN]" line, or None ("??:0")."""
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        file, line = parts[0], int(parts[1])
    elif len(parts) >= 2 and parts[-1].isdigit():
        file, line = ":".join(parts[:-1]), int(parts[-1])
    else:
        return None
    return (file, line) if file and file != "??" and line > 0 else None


def addr2line(path, address):
    """(function, offset, file, line) of the file address (the return address less 1), or
    None."""
    out = subprocess.run(["eu-addr2line", "-S", "-C", "-e", path, "0x%x" % address],
                         capture_output=True, env=ENV).stdout.decode("latin-1").splitlines()
    if len(out) < 2:
        return None
    sym, src = out[0], source(out[1])
    function, offset = "", 0
    if sym and sym != "??" and not sym.startswith("("):    # "(SECTION)+0xOFF": no symbol
        name, plus, off = sym.rpartition("+0x")
        if plus and all(c in "0123456789abcdef" for c in off) and off:
            function, offset = name, int(off, 16)
        else:
            function = sym
        function, offset = printable(function), offset + 1
    file, line = (printable(src[0]), src[1]) if src else ("", 0)
    if not function and not file:
        return None
    return (function, offset if function else 0, file, line)


class Addr2Line:
    """frames.Frames's symbols: symbols(frame, address, module) -> (function, offset, file,
    line) or None; enabled: whether to symbolize (default: engine_symbolizes())."""

    def __init__(self, enabled=None):
        self.enabled = engine_symbolizes() if enabled is None else enabled
        self.files = {}       # (path, build_id) -> whether the file is that build
        self.found = {}       # (path, file address) -> what addr2line() says

    def __call__(self, frame, address, module):
        _, _, path, bias, want = module
        if not self.enabled or not want or address <= bias:
            return None
        ok = self.files.get((path, want))
        if ok is None:
            ok = self.files[(path, want)] = regular_file(path) and build_id(path) == want
        if not ok:
            return None
        key = (path, address - bias - 1)
        if key not in self.found:
            self.found[key] = addr2line(path, key[1])
        return self.found[key]
