"""cudapool_analysis/replayed.py: the pool's decisions for a log that has none. A log of requests
alone (alloc and free events without block sizes or segments: a synthetic log, or one converted
from another tool's trace) says nothing about segments and blocks; the C++ replay, the one source
of pool decisions, does: `cudapool-replay --write-log OUT LOG` writes them as a cudapool.log/1 file
(docs/replay.md). `pool_events(path)` gives the file to read for the layout: the log itself when it
has pool decisions, else such a replayed log (a temporary file, removed afterwards).

Not here: finding cudapool-replay (tools.find_tool: $CUDAPOOL_REPLAY, the build trees, an
install's PREFIX/bin, PATH), reading either file (reader.py), what is drawn from it (layout.py
and the outputs).
"""

import contextlib
import os
import subprocess
import tempfile

from . import vocabulary as v
from .reader import LogError, Malformed, lines_of, parse_line
from .tools import find_tool

SCAN_LINES = 5000   # the lines looked at to decide whether a log has pool decisions
POOL_ACTIONS = v.actions("segment_alloc", "segment_map")


def has_pool_decisions(path):
    """True when the log at path has pool decisions: an alloc with a block_size, or a segment
    event, in its first SCAN_LINES lines (every log the shim writes has both from the start)."""
    with open(path, "rb") as f:
        for n, raw in enumerate(lines_of(f)):
            if n >= SCAN_LINES:
                break
            try:
                obj = parse_line(raw)
            except Malformed:
                continue
            if not isinstance(obj, dict):
                continue
            action = obj.get("action")
            if action in POOL_ACTIONS or (action == "alloc" and "block_size" in obj):
                return True
    return False


@contextlib.contextmanager
def pool_events(path):
    """Yields the path to read for the layout: path itself, or (when it has no pool decisions) a
    log the replay wrote, which a caller tells apart by comparing the two. Raises LogError when
    the replay is needed and cannot be found, or fails."""
    if path == "-" or has_pool_decisions(path):
        yield path
        return
    tool = find_tool("cudapool-replay")
    if tool is None:
        raise LogError("%s has no pool decisions (a log of requests only: no block sizes, no "
                       "segments); its layout comes from the replay, and cudapool-replay was not "
                       "found: build it (scripts/cudapool build) or set CUDAPOOL_REPLAY" % path)
    fd, out = tempfile.mkstemp(prefix="cudapool-replayed-", suffix=".jsonl")
    os.close(fd)
    try:
        done = subprocess.run([tool, "--write-log", out, path], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        if done.returncode != 0:
            raise LogError("the replay of %s failed (%s, exit %d): %s" % (
                path, tool, done.returncode,
                done.stderr.decode("utf-8", "replace").strip()[-500:]))
        yield out
    finally:
        with contextlib.suppress(OSError):
            os.unlink(out)
