#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/cli/analyze_compare.py ENGINE [--several] LOG...: the analysis engine (cudapool-analyze,
docs/analysis-format.md) against the Python report on the same logs, field by field. For each log:
`cudapool report --json`'s object as the Python report computed it (the test oracle
tests/oracle/report.py: read_log, in this process) against the engine's "report", and the HTML
page's data (oracle.pagedata.log_data) against its "page", the engine's lines of text made from
figures left out (text_left_out); a log that cannot be read must be refused by both, with the same
message. --several: the logs as one run of several ranks, the cross-rank table and its notes against
report.several()'s. Every difference is printed with its path, except those KNOWN (a field and the
reason it differs: docs/analysis-format.md, "Where the engine differs"); exit status 1 when one is
left. Run by tests/cli/analyze_agree.sh (PYTHONPATH: scripts/; tests/ is put on sys.path here)."""
import json
import os
import re
import subprocess
import sys

# The engine's test oracles (tests/oracle: `oracle`, not the shipped package): tests/ on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from oracle.reader import LogError, check_logs  # noqa: E402
from oracle import pagedata  # noqa: E402
from oracle.report import read_log, several  # noqa: E402

# (path pattern, why): differences that are meant. The engine follows the Python report in
# every field on every log of the suite; none is listed.
KNOWN = []
SHOWN = 20


def differences(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append((path + "." + str(k), a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                differences(a[k], b[k], path + "." + str(k), out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((path, "%d entries" % len(a), "%d entries" % len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, "%s[%d]" % (path, i), out)
    elif a != b or isinstance(a, bool) != isinstance(b, bool) or (a is None) != (b is None):
        out.append((path, a, b))


def text_left_out(x):
    """One log of the engine's document without the text only C++ writes, from figures compared
    here: each device's summary_table (pool/summary.cpp) and each oom explanation (pool/oom.cpp)
    of an event with figures. The Python side no longer copies them (tests/cli/report_text.sh
    checks the text)."""
    rep = x.get("report")
    if isinstance(rep, dict):
        for d in rep.get("devices", {}).values():
            d.pop("summary_table", None)
        for d in ((rep.get("replay") or {}).get("devices") or {}).values():
            d.pop("summary_table", None)
        for o in rep.get("ooms", []):
            o.pop("explanation", None)
    page = x.get("page")
    if isinstance(page, dict):
        for o in page.get("ooms", []):
            if o.get("figures") is not None:
                o.pop("explanation", None)
    return x


def known(path):
    return any(re.fullmatch(pattern, path) for pattern, _ in KNOWN)


def normal(value):
    """A value as JSON reads it back (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value))


def engine(binary, logs):
    done = subprocess.run([binary] + logs, capture_output=True)
    err = done.stderr.decode("utf-8", "replace").strip().replace("cudapool-analyze: ", "")
    doc = json.loads(done.stdout) if done.returncode == 0 else None
    for x in doc["logs"] if doc else []:
        text_left_out(x)
    return done.returncode, doc, err


def python(log):
    """(report, page) of one log by the Python side, or the message it refuses it with."""
    errors = check_logs([log])[1]
    if errors:
        return None, None, errors[0]
    try:
        rep, _ = read_log(log, 0)
        page, with_replay, _ = pagedata.log_data(log, 0)
        for k in ("replay", "cache_hits", "ending", "exited_normally"):   # requests only
            rep[k] = with_replay[k]
    except LogError as e:
        return None, None, str(e)
    return normal(rep), normal(page), None


def compare_one(binary, log):
    rep, page, py_error = python(log)
    rc, doc, en_error = engine(binary, [log])
    if py_error is not None or rc != 0:
        if py_error is None or rc == 0:
            return [("exit", py_error or "read", en_error or "read")]
        return [] if py_error == en_error else [("message", py_error, en_error)]
    found = []
    differences(rep, doc["logs"][0]["report"], "report", found)
    differences(page, doc["logs"][0]["page"], "page", found)
    return found


def compare_several(binary, logs):
    reports, rows = [], []
    for i, log in enumerate(logs):
        rep, row = read_log(log, i)
        reports.append(rep)
        rows.append(row)
    want = normal(several(reports, rows))
    rc, doc, err = engine(binary, logs)
    if rc != 0:
        return [("exit", "read", err)]
    found = []
    differences(want["logs"], [x["report"] for x in doc["logs"]], "logs", found)
    differences(want["ranks"], doc["ranks"], "ranks", found)
    differences(want["notes"], doc["notes"], "notes", found)
    return found


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    groups = [args[1:]] if args and args[0] == "--several" else [[log] for log in args]
    failed = 0
    for logs in groups:
        found = compare_several(binary, logs) if len(logs) > 1 else compare_one(binary, logs[0])
        left = [d for d in found if not known(d[0])]
        if left:
            failed += 1
            print("%s: %d difference(s) between the Python report and the engine"
                  % (" ".join(logs), len(left)))
            for path, a, b in left[:SHOWN]:
                print("  %s: python %s | engine %s" % (path, repr(a)[:200], repr(b)[:200]))
    print("analyze_compare: %d of %d compared, %d with differences"
          % (len(groups) - failed, len(groups), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
