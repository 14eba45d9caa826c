# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/sites.py: allocation sites for the HTML page: the `backtrace` of alloc events
(written with CUDAPOOL_BACKTRACE=N, docs/log-format.md), each distinct stack one site. Counts the
allocations of each site over the log, the bytes each site holds at a device's allocated peak
(from segmap.Detail beside the layout at that line), groups the leaks by stack, and names each
site by its focus: the first frame outside the CUDA runtime and the allocators, on the frames'
readable texts (frames.Frames: library + offset from the summary's modules, the leaks' symbols).

An alloc event with a Python stack (pystacks.py: reader.py hands it over resolved) has the site of
that stack instead, its native frames not looked at: named by its first user frame, its frames'
texts "file:line function", innermost first; Python sites come before native ones in every list.

The passes key the sites by their bare frames (a Python site by its stack's id); the texts come
once the log is read (its summary line, with the modules, is its last line): Sites.named(),
leak_groups().

Not here: which blocks are live (layout.py, segmap.py), the leaks themselves (leaks.py), naming
a frame (frames.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

from cudapool_analysis.frames import frame_text
from .leaks import counted_block_size
from . import pystacks

TOP_SITES = 25        # rows of each table
MAX_FRAMES = 16       # the writer's limit (CUDAPOOL_BACKTRACE 0 to 16)


# Frames of the CUDA runtime and driver, of cudapool, and of PyTorch's allocator (c10): every
# allocation passes through them, so a site is named by its first frame outside them.
RUNTIME_LIBRARIES = ("libcudart", "libcuda.so", "libcudapool", "libc10_cuda", "libc10.so")


def focus(texts):
    """The index of the frame that names a site, among its readable texts (frames.Frames.text):
    the first one outside RUNTIME_LIBRARIES that names a library; else the first bare address
    outside them (an older log without modules, code outside every module); 0 when every frame
    is inside them."""
    bare = None
    for i, f in enumerate(texts):
        if not any(lib in f for lib in RUNTIME_LIBRARIES):
            if " " in f:
                return i
            if bare is None:
                bare = i
    return bare or 0


class Sites:
    """Distinct stacks, each an id (its place in frames); per id [allocations, bytes]."""

    def __init__(self):
        self.ids = {}
        self.frames = []   # per site: its bare frames, as the events carry them
        self.allocs = []
        self.python = set()   # the ids of Python sites (frames: the stack's frames)

    def site(self, obj):
        """The site id of an alloc event's object, or None (no Python stack, and no backtrace or
        not a list of strings)."""
        stack = obj.get(pystacks.RESOLVED)
        if stack is not None:
            key = ("python", obj["python_stack"])
            i = self.ids.get(key)
            if i is None:
                i = self.ids[key] = len(self.frames)
                self.frames.append(stack)
                self.python.add(i)
                self.allocs.append([0, 0])
            return i
        bt = obj.get("backtrace")
        if not bt or type(bt) is not list:
            return None
        key = tuple(bt[:MAX_FRAMES])
        try:
            i = self.ids.get(key)
        except TypeError:       # a frame that is a list or an object
            return None
        if i is None:
            if not all(type(f) is str for f in key):
                return None
            i = self.ids[key] = len(self.frames)
            self.frames.append(key)
            self.allocs.append([0, 0])
        return i

    def count(self, obj, block_size):
        """An alloc event with a backtrace (timeline.Timeline's on_alloc, in the first pass)."""
        i = self.site(obj)
        if i is not None:
            a = self.allocs[i]
            a[0] += 1
            a[1] += block_size

    def named(self, names):
        """The page's sites: {"frames": per site its frames' texts, "focus": per site the index of
        the frame that names it}, names being the log's frames.Frames."""
        frames, foci = [], []
        for i, key in enumerate(self.frames):
            if i in self.python:
                frames.append([frame_text(pystacks.frame_text(f)) for f in key])
                foci.append(pystacks.focus(key))
            else:
                frames.append(names.texts(key))
                foci.append(focus(frames[-1]))
        return {"frames": frames, "focus": foci,
                "python": [i in self.python for i in range(len(self.frames))]}

    def native(self, i):
        """0 for a Python site, 1 for a native one (or -1, none): Python sites sort first."""
        return 0 if i in self.python else 1

    def most_frequent(self):
        order = sorted(range(len(self.allocs)),
                       key=lambda i: (self.native(i), -self.allocs[i][0], i))
        return [{"site": i, "count": self.allocs[i][0], "bytes": self.allocs[i][1]}
                for i in order[:TOP_SITES]]


def at_peak(allocated, sites):
    """The sites holding the most bytes among allocated blocks (segmap.Detail.allocated():
    (ptr, block_size, requested, seq, site)), Python sites first: [{site (-1: no backtrace),
    count, bytes}]."""
    held = {}
    for _, bs, _, _, site in allocated:
        h = held.setdefault(-1 if site is None else site, [0, 0])
        h[0] += 1
        h[1] += bs
    order = sorted(held.items(), key=lambda kv: (sites.native(kv[0]), -kv[1][1], kv[0]))
    return [{"site": s, "count": c, "bytes": b} for s, (c, b) in order[:TOP_SITES]]


def leak_groups(entries, names):
    """The report's leak entries grouped by stack, the most bytes first: [{backtrace (the frames'
    texts, names being the log's frames.Frames), focus, count, bytes, first_seq}]. Only what
    the events bear out is counted (leaks.counted_block_size): an entry they do not is left
    out."""
    groups = {}
    for e in entries:
        block_size = counted_block_size(e)
        if block_size is None:
            continue
        key = tuple(f if type(f) is str else "?" for f in e.get("backtrace") or ())
        g = groups.get(key)
        if g is None:
            texts = names.texts(key)
            g = groups[key] = {"backtrace": texts, "focus": focus(texts), "count": 0,
                               "bytes": 0, "first_seq": e.get("seq")}
        g["count"] += 1
        g["bytes"] += block_size
    return sorted(groups.values(), key=lambda g: (-g["bytes"], -g["count"]))[:TOP_SITES]
