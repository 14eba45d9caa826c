# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/pystacks.py: the Python frames and stacks of a log (CUDAPOOL_BACKTRACE=python;
docs/log-format.md "Python stacks" and "Valid lines"), read independently of the engine
(tools/analyze/python_stacks.h, tools/replay/definition_line.h): the definition lines
`python_frame` and `python_stack` checked (malformed: an id that is not an unsigned integer from
1, a frame's file or function not a string or line not an unsigned integer, a stack's frames not a
list of unsigned integers from 1), the first definition of each id kept and a second listed, a
stack's frames resolved when it is defined (a frame not defined before it: unknown, None); and
how the page names a Python frame and which frame names a site (the first user frame).

Not here: the event lines (reader.py), the sites' table (sites.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import re

from cudapool_analysis import vocabulary as v

DEFINITION_ACTIONS = (v.PYTHON_FRAME_ACTION, v.PYTHON_STACK_ACTION)
MAX_FRAMES = 1 << 20        # distinct frames kept; past them a definition is dropped (counted)
MAX_STACKS = 1 << 20
# The key under which reader.py hands an alloc event's resolved stack over in its object (a
# tuple: no JSON object has such a key): a tuple of frames (file, line, function) or None.
RESOLVED = ("python_stack",)
LONG_PATH = 60              # characters: a longer path is shortened to its last PATH_TAIL parts
PATH_TAIL = 3
_STDLIB = re.compile(r"/lib/python[0-9]+\.[0-9]+/")


def _uint(value, low=0):
    return type(value) is int and low <= value < v.UINT_LIMIT


class PythonStacks:
    """One log's table: frames {id: (file, line, function)}, stacks {id: tuple of frames, None
    for an unknown one}."""

    def __init__(self):
        self.frames = {}
        self.stacks = {}
        self.dropped = 0

    def define(self, obj, action):
        """A definition line's object: None when taken; else (malformed, why): the problem."""
        what = action
        ident = obj.get("id")
        if not _uint(ident, 1):
            return True, "%s id is not an unsigned integer from 1" % what
        if action == v.PYTHON_FRAME_ACTION:
            if type(obj.get("file")) is not str:
                return True, "%s file is not a string" % what
            if not _uint(obj.get("line")):
                return True, "%s line is not an unsigned integer" % what
            if type(obj.get("function")) is not str:
                return True, "%s function is not a string" % what
            if ident in self.frames:
                return False, "a second %s %d: ignored" % (what, ident)
            if len(self.frames) >= MAX_FRAMES:
                self.dropped += 1
                return None
            self.frames[ident] = (obj["file"], obj["line"], obj["function"])
            return None
        frames = obj.get("frames")
        if type(frames) is not list or not all(_uint(f, 1) for f in frames):
            return True, "%s frames is not a list of unsigned integers from 1" % what
        if ident in self.stacks:
            return False, "a second %s %d: ignored" % (what, ident)
        if len(self.stacks) >= MAX_STACKS:
            self.dropped += 1
            return None
        self.stacks[ident] = tuple(self.frames.get(f) for f in frames)
        return None

    def resolve(self, ident):
        """An alloc event's python_stack: its stack, or None (not an unsigned integer, or naming
        no stack defined before it)."""
        if not _uint(ident):
            return None
        return self.stacks.get(ident)


def short_path(path):
    if len(path) <= LONG_PATH:
        return path
    cut = len(path)
    for _ in range(PATH_TAIL):
        slash = path.rfind("/", 0, cut)
        if slash <= 0:
            return path
        cut = slash
    return "..." + path[cut:]


def frame_text(frame):
    """The page's text of a frame: "file:line function", "?" for an unknown one."""
    if frame is None:
        return "?"
    return "%s:%d %s" % (short_path(frame[0]), frame[1], frame[2])


def user_frame(frame):
    """The program's own frame: not in the standard library or an installed package, not a
    pseudo-file ("<frozen runpy>", "<string>"), not unknown."""
    if frame is None:
        return False
    f = frame[0]
    return not (f.startswith("<") or "/site-packages/" in f or "/dist-packages/" in f
                or _STDLIB.search(f))


def focus(stack):
    """The index of the frame that names a Python site: the first user frame, else 0."""
    return next((i for i, f in enumerate(stack) if user_frame(f)), 0)
