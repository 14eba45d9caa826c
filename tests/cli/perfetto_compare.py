#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/cli/perfetto_compare.py [--several] LOG...: `cudapool export --perfetto` from the analysis
engine (perfetto.export: cudapool-analyze --perfetto, found as the package finds it;
$CUDAPOOL_ANALYZE overrides) against the Python pass it replaced (the test oracle
tests/oracle/perfetto_pass.py: export), on the same logs: the two traces must be the same bytes,
and the same notes. Each LOG alone, or with
--several all of them as the ranks of one job. A log both refuse is skipped (the engine's refusal
is checked by export_perfetto.sh and analyze_agree.sh); one refused by only one side is a
difference. Prints each difference (the first line that differs); exit status 1 when there is
one. Run by tests/cli/perfetto_agree.sh (PYTHONPATH: scripts/; tests/ is put on sys.path here)."""
import contextlib
import io
import os
import sys

# The engine's test oracles (tests/oracle: `oracle`, not the shipped package): tests/ on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cudapool_analysis import perfetto  # noqa: E402
from cudapool_analysis.engine import EngineError, LogsRefused  # noqa: E402
from oracle.reader import LogError  # noqa: E402
from oracle import perfetto_pass  # noqa: E402


def trace(export, logs):
    """(text, notes) of the trace, or (None, why) when the export refuses the logs."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stderr(io.StringIO()) as err:
            notes = export(logs, out, perfetto.MAX_POINTS, perfetto.MAX_INSTANTS)
    except (LogError, LogsRefused, EngineError) as e:
        return None, str(e) or err.getvalue().strip()
    return out.getvalue(), notes


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a.split("\n"), b.split("\n"))):
        if x != y:
            return "line %d: python %s | engine %s" % (i + 1, x[:300], y[:300])
    return "python %d bytes | engine %d bytes" % (len(a), len(b))


def compare(logs):
    """The differences of the two exports of logs (a list of lines)."""
    want, want_notes = trace(perfetto_pass.export, logs)
    got, got_notes = trace(perfetto.export, logs)
    if want is None and got is None:
        return []
    if want is None or got is None:
        return ["refused by %s only (%s)" % ("python" if want is None else "the engine",
                                             want_notes if want is None else got_notes)]
    out = []
    if want != got:
        out.append(first_difference(want, got))
    if want_notes != got_notes:
        out.append("notes: python %r | engine %r" % (want_notes, got_notes))
    return out


def main(argv):
    several = argv[:1] == ["--several"]
    logs = argv[1:] if several else argv
    runs = [logs] if several else [[log] for log in logs]
    bad = 0
    for run in runs:
        for d in compare(run):
            bad += 1
            print("%s: %s" % (" ".join(os.path.basename(x) for x in run), d))
    print("perfetto_compare: %d run(s), %d difference(s)" % (len(runs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
