# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/frames.py: readable names for the frames of a log's backtraces, one rule for
the memory_viz export (memviz.py, memviz_snapshot.py) and the HTML page's test oracle
(tests/oracle/sites.py, pagedata.py); the engine's twin is tools/analyze/frames.h.

alloc events carry bare return addresses ("0x7f6d5f8146f3"); the summary line carries, when
backtraces were recorded, the loaded objects' address ranges (`modules`: base, end, path, bias,
build_id) and its leaks' frames symbolized at exit
("0x7f33aa0101c0 /usr/lib/libtorch_cuda.so(forward+0x1c)"). A frame is named, in this order of
preference:

  what the module's own file says (symbols: the engine's libdw symbolizer,
  tools/analyze/symbolizer.h, for the export; the test oracle's eu-addr2line,
  tests/oracle/symbols.py, for the oracle): only for a module with a build_id that the file at its
  path has too
      page "0x7f6d5f8146f3 libfoo.so(do_alloc(int)+0x13) at foo.cpp:42"
      memviz {name: "do_alloc(int)", filename: "/src/foo.cpp", line: 42}
      (no symbol there: page "0x7f6d5f8146f3 libfoo.so+0x146f3 at foo.cpp:42", memviz name
      "libfoo.so+0x146f3"; no line table: no " at", memviz filename the library's path, line 0)
  a symbol (the frame's own text, else a leak's frame of the same address)
      page "0x7f33aa0101c0 libtorch_cuda.so(forward+0x1c)"     memviz name "forward+0x1c"
  the module holding the address (binary search over the sorted ranges)
      page "0x7f6d5f8146f3 libcudart.so.13+0x146f3"            memviz name "libcudart.so.13+0x146f3"
  the file and offset the frame's text names without a symbol ("FILE(?+0xOFF)": dladdr's)
  the bare address (an older log without modules, or an address outside every module)
      page "0x7f6d5f8146f3"                                    memviz name "0x7f6d5f8146f3"

memory_viz's filename is otherwise the library's path ("??" when unknown), its line 0. Page texts
are cut at MAX_FRAME_TEXT characters.

Not here: which frame names a site (sites.focus), checking the summary's fields (the engine),
reading the libraries' files (the engine; `cudapool report --no-symbols` and `cudapool export
--no-symbols` turn that off).
"""

import bisect

from . import vocabulary as v

MAX_FRAME_TEXT = 300
UNKNOWN_FILE = "??"


def frame_text(text):
    return text if len(text) <= MAX_FRAME_TEXT else text[:MAX_FRAME_TEXT] + "..."


def basename(path):
    return path.rsplit("/", 1)[-1] or path


def parse(text):
    """(address text, file, symbol, offset in the file) of a frame "0xADDR" or "0xADDR
    FILE(SYMBOL+0xOFF)", None for what it lacks: the symbol None when dladdr found none, and the
    offset then the one written after it ("?+0x1c": from the file's load address)."""
    addr, _, rest = text.partition(" ")
    if not rest:
        return addr, None, None, None
    if rest.endswith(")") and "(" in rest:
        path, _, sym = rest[:-1].rpartition("(")
        if sym and not sym.startswith("?") and not sym.startswith("+"):
            return addr, path or None, sym, None
        off = v.hex_value(sym.lstrip("?").lstrip("+"))
        return addr, path or None, None, off if path else None
    return addr, rest, None, None


def engine_symbols(table):
    """The symbols of Frames from the engine's "symbols" table ({frame: [function, offset, file,
    line]}, docs/analysis-format.md: the frames its symbolizer named)."""
    table = table or {}

    def symbols(frame, address, module):
        got = table.get(frame)
        return tuple(got) if got is not None else None
    return symbols


class Frames:
    """The names of one log's frames, from its summary line (checks.check_summary()'d, or None):
    text(frame) for the page, memviz(frame) for the export; both cached per distinct frame.
    symbols(frame, address, module): what the module's own file says of the frame, (function,
    offset, file, line) or None; module (base, end, path, bias, build_id) holds the address.
    Without symbols nothing is symbolized."""

    def __init__(self, summary=None, symbols=None):
        summary = summary or {}
        mods = []
        for m in summary.get("modules") or ():
            base, end = v.hex_value(m.get("base")), v.hex_value(m.get("end"))
            if base is not None and end is not None and base < end and type(m.get("path")) is str:
                bias = v.hex_value(m.get("bias"))
                build_id = m.get("build_id")
                mods.append((base, end, m["path"], bias or 0,
                             build_id if type(build_id) is str else ""))
        mods.sort()
        self.bases = [m[0] for m in mods]
        self.modules = mods
        self.symbolize = symbols
        self.symbols = {}       # address -> (file, symbol), from the leaks' symbolized frames
        for leak in summary.get("leaks") or ():
            for f in (leak.get("backtrace") or ()) if isinstance(leak, dict) else ():
                if type(f) is str and " " in f:
                    addr, path, sym, _ = parse(f)
                    a = v.hex_value(addr)
                    if a is not None and path and sym:
                        self.symbols.setdefault(a, (path, sym))
        self._names = {}
        self._texts = {}
        self._memviz = {}

    def holder(self, addr):
        """The module (base, end, path, bias, build_id) holding addr (an integer), or None."""
        i = bisect.bisect_right(self.bases, addr) - 1
        if i < 0:
            return None
        return self.modules[i] if addr < self.modules[i][1] else None

    def module(self, addr):
        """(path, offset) of the module holding addr (an integer), or None."""
        m = self.holder(addr)
        return (m[2], addr - m[0]) if m is not None else None

    def name(self, frame):
        """(address text, file or None, symbol or None, module offset or None, native) of a
        frame; native: what the module's own file says, (function, offset, file, line), or
        None."""
        got = self._names.get(frame)
        if got is None:
            addr, path, sym, off = parse(frame)
            a = v.hex_value(addr)
            native = None
            if a is not None:
                mod = self.holder(a)
                if mod is not None and self.symbolize is not None:
                    native = self.symbolize(frame, a, mod)
                if native is not None:
                    path, off = mod[2], a - mod[0]
                    sym = "%s+0x%x" % (native[0], native[1]) if native[0] else None
                elif sym is None:
                    if a in self.symbols:
                        (path, sym), off = self.symbols[a], None
                    elif mod is not None:
                        path, off = mod[2], a - mod[0]
            got = self._names[frame] = (addr, path, sym, off, native)
        return got

    def text(self, frame):
        """The page's text of a frame (see the module's docstring)."""
        out = self._texts.get(frame)
        if out is None:
            addr, path, sym, off, native = self.name(frame)
            if path is None:
                out = addr
            elif sym is not None:
                out = "%s %s(%s)" % (addr, basename(path), sym)
            elif off is not None:
                out = "%s %s+0x%x" % (addr, basename(path), off)
            else:
                out = "%s %s" % (addr, basename(path))
            if native is not None and native[2]:
                out += " at %s:%d" % (basename(native[2]), native[3])
            out = self._texts[frame] = frame_text(out)
        return out

    def texts(self, frames):
        return [self.text(f) if type(f) is str else "?" for f in frames]

    def memviz(self, frame):
        """memory_viz's {name, filename, line} of a frame (one dict per distinct frame)."""
        out = self._memviz.get(frame)
        if out is None:
            addr, path, sym, off, native = self.name(frame)
            if native is not None:
                function, _, file, line = native
                name = function or "%s+0x%x" % (basename(path), off)
                out = {"name": name, "filename": file or path, "line": line if file else 0}
            else:
                name = sym if sym is not None else \
                    "%s+0x%x" % (basename(path), off) if off is not None else addr
                out = {"name": name, "filename": path or UNKNOWN_FILE, "line": 0}
            self._memviz[frame] = out
        return out
