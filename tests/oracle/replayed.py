# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/replayed.py: the pool's decisions for a log that has none. A log of requests
alone (alloc and free events without block sizes or segments: a synthetic log, or one converted
from another tool's trace) says nothing about segments and blocks; the C++ replay, the one source
of pool decisions, does: `cudapool-replay --write-log OUT LOG` writes them as a cudapool.log/1 file
(docs/replay.md). `pool_events(path)` gives the file to read for the layout: the log itself when it
has pool decisions, else such a replayed log.

The replayed log is a private temporary file without a name (tempfile.TemporaryFile: O_TMPFILE,
or unlinked at once), handed to the replay as its --write-log /dev/fd/N and read back through
/proc/self/fd: nothing of it outlives this process, however it ends (SIGKILL included), and the
replay itself ends with it (tools.run_tool).

Not here: finding and running cudapool-replay (tools.py: $CUDAPOOL_REPLAY, the build trees, an
install's PREFIX/bin, PATH), reading either file (reader.py, inputs.py: a log given as - or a FIFO
is the copy inputs.py made), what is drawn from it (layout.py and the outputs).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import contextlib
import tempfile

from cudapool_analysis import vocabulary as v
from cudapool_analysis.decoded import ended_early_said
from cudapool_analysis.inputs import LogError, display_name, label, open_log, tool_argument
from oracle.reader import Malformed, lines_of, parse_line
from cudapool_analysis.tools import find_tool, run_tool

SCAN_LINES = 5000   # the lines looked at to decide whether a log has pool decisions
_NOTE = "cudapool-replay: note: "
_CUT = " data ends in the middle of a frame"   # the C++ reader's words (log/read/input.cpp)
POOL_ACTIONS = v.actions("segment_alloc", "segment_map")


def has_pool_decisions(path):
    """True when the log at path has pool decisions: an alloc with a block_size, or a segment
    event, in its first SCAN_LINES lines (every log the shim writes has both from the start)."""
    with open_log(path, progress=False) as f:
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
    name that opens the log the replay wrote (/proc/self/fd/N, valid inside the block), which a
    caller tells apart by comparing the two. Raises LogError when the replay is needed and cannot
    be found, or fails. Check the log first (reader.check_log): a replay takes anything for a
    log."""
    if has_pool_decisions(path):
        yield path
        return
    name = display_name(path)
    tool = find_tool("cudapool-replay")
    if tool is None:
        raise LogError("%s has no pool decisions (a log of requests only: no block sizes, no "
                       "segments); its layout comes from the replay, and cudapool-replay was not "
                       "found: build it (scripts/cudapool build) or set CUDAPOOL_REPLAY" % name)
    log, fds = tool_argument(path)
    try:
        out = tempfile.TemporaryFile()
    except OSError as e:
        raise LogError("cannot make a temporary file for the replay of %s (%s): %s"
                       % (name, tempfile.gettempdir(), e.strerror or e)) from None
    with out:
        fd = out.fileno()
        try:
            done = run_tool([tool, "--write-log", "/dev/fd/%d" % fd, "--name", name, log],
                            pass_fds=(fd,) + fds)
        except OSError as e:
            raise LogError("cannot run %s for the replay of %s: %s"
                           % (tool, name, e.strerror or e)) from None
        if done.returncode != 0:
            raise LogError("the replay of %s failed (%s, exit %d): %s" % (
                name, tool, done.returncode,
                done.stderr.decode("utf-8", "replace").strip()[-500:]))
        # A compressed log cut in the middle of a frame: the replay read it to the cut and said
        # so; said by the command as it says what it reads itself (inputs.ended_early()).
        for line in done.stderr.decode("utf-8", "replace").splitlines():
            said = line[len(_NOTE):] if line.startswith(_NOTE) else ""
            if said.startswith(name + ": the ") and _CUT in said:
                ended_early_said(path, said)
        replay = "/proc/self/fd/%d" % fd
        label(replay, "%s (its replay)" % name)
        yield replay
