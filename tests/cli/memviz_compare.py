#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/cli/memviz_compare.py MAX_ENTRIES LOG...: `cudapool export --memory-viz` from the analysis
engine (exportcli.memviz_snapshot: cudapool-analyze --memory-viz, found as the package finds it;
$CUDAPOOL_ANALYZE overrides) against the Python pass it replaced (the test oracle
tests/oracle/memviz_pass.py: build over pool_log's log, with the notes the command added), on the
same logs: the snapshots must be equal objects once pickled and read back, and the notes the same. A
log both refuse is skipped; one refused by only one side is a difference. Prints each difference
(the first path that differs); exit status 1 when there is one. Run by tests/cli/memviz_agree.sh
(PYTHONPATH: scripts/)."""
import contextlib
import io
import os
import pickle
import sys

# The engine's test oracles (tests/oracle: `oracle`, not the shipped package): tests/ on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cudapool_analysis import memviz  # noqa: E402
from cudapool_analysis.engine import EngineError, LogsRefused  # noqa: E402
from cudapool_analysis.export import ExportError  # noqa: E402
from cudapool_analysis.exportcli import fenced_note, memviz_snapshot  # noqa: E402
from cudapool_analysis.inputs import ended_early, open_log  # noqa: E402
from oracle.reader import LogError, display_name  # noqa: E402
from oracle import memviz_pass  # noqa: E402
from oracle.pool_log import check_logs, pool_log  # noqa: E402


def oracle(log, max_entries):
    """(snapshot, notes) as `cudapool export --memory-viz` made them before the engine did."""
    check_logs([log])
    name = display_name(log)
    with pool_log(log) as path:
        with open_log(path) as f:
            snap, notes = memviz_pass.build(f, max_entries, name)
        if ended_early(log):
            notes.insert(0, ended_early(log))
        if path != log:
            notes.insert(0, "%s has no pool decisions: its requests were replayed under its "
                         "settings (cudapool replay); the segments and blocks are the replay's"
                         % name)
    notes.extend(fenced_note(snap, name))    # the command's note, from the snapshot
    return snap, notes


def made(how, log, max_entries):
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            snap, notes = how(log, max_entries)
    except (LogError, LogsRefused, EngineError, ExportError) as e:
        return None, type(e).__name__ + ": " + str(e)
    buf = io.BytesIO()
    memviz.write(snap, buf)
    return pickle.loads(buf.getvalue()), notes


def first_difference(a, b, path="snapshot"):
    if type(a) is not type(b):
        return "%s: python %r | engine %r" % (path, a, b)
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b or a[k] != b[k]:
                if k not in a or k not in b:
                    return "%s.%s: only on one side" % (path, k)
                return first_difference(a[k], b[k], "%s.%s" % (path, k))
    if isinstance(a, (list, tuple)):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, "%s[%d]" % (path, i))
        return "%s: python %d entries | engine %d" % (path, len(a), len(b))
    return "%s: python %r | engine %r" % (path, a, b)


def main(argv):
    max_entries = int(argv[0])
    bad = 0
    for log in argv[1:]:
        want, want_notes = made(oracle, log, max_entries)
        got, got_notes = made(memviz_snapshot, log, max_entries)
        diffs = []
        if (want is None) != (got is None):
            diffs.append("refused by %s only (%s)" % ("python" if want is None else "the engine",
                                                      want_notes if want is None else got_notes))
        elif want is not None:
            if want != got:
                diffs.append(first_difference(want, got))
            if want_notes != got_notes:
                diffs.append("notes: python %r | engine %r" % (want_notes, got_notes))
        for d in diffs:
            bad += 1
            print("%s: %s" % (os.path.basename(log), d[:600]))
    print("memviz_compare: %d log(s), %d difference(s)" % (len(argv) - 1, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
