# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/ending.py: how a log ends, as far as the log tells (docs/log-format.md, "The
summary" and "Guarantees"): with its summary line (the process exited normally); with a summary
line longer than the readers' limit (it exited normally, the line cannot be read); or without one,
which a kill, a crash or a log cut short (a full disk) all leave, and the log does not say which.
What it does tell is said with it: the last line cut in its middle (no newline at its end; a cut
summary line), seq gaps (records lost), compressed data that ends in the middle of a frame.

ending(run, f, cut) -> {"summary": "read" | "too long" | "none", "line", "text", "clues"};
report.py puts it in the report. Not here: reading the lines (reader.py), the notes about the summary's
figures (report.py).

A test oracle of the analysis engine (tests/oracle/__init__.py): not in the shipped package,
not installed.
"""

import re

from cudapool_analysis.jsonline import MAX_LINE

PEEK = 4096                   # bytes of the last line looked at
CHUNK = 1 << 20               # read backwards in these, to find where the last line starts
_SUMMARY = re.compile(rb'"action"\s*:\s*"summary"')


def last_line(f):
    """(its length in bytes without the newline, its first PEEK bytes, whether it ends in a
    newline) of the last line of a seekable binary file, or None when the file is empty. Reads
    back from the end to the newline before it: as many bytes as the line has. A decoded log
    (decoded.py), which is read from its start only, knows it from its pass."""
    own = getattr(f, "last_line", None)
    if own is not None:
        return own()
    end = f.seek(0, 2)
    if end == 0:
        return None
    f.seek(end - 1)
    newline = f.read(1) == b"\n"
    stop = end - 1 if newline else end
    start = pos = stop
    while pos > 0:
        n = min(CHUNK, pos)
        pos -= n
        f.seek(pos)
        at = f.read(n).rfind(b"\n")
        if at >= 0:
            start = pos + at + 1
            break
        start = pos
    f.seek(start)
    return stop - start, f.read(min(PEEK, stop - start)), newline


def ending(run, f, cut=None):
    """How the log read by run (accounting.Run) ends; f: the log, seekable; cut: what to say of
    a compressed log that ends in the middle of a frame (inputs.ended_early()), or None."""
    r = run.reader
    clues = [cut] if cut else []
    if r.summary is not None:
        text = "summary line at line %d: the process exited normally" % r.summary_line
        return {"summary": "read", "line": r.summary_line, "requests_only": False, "clues": clues,
                "text": text + "".join("; " + c for c in clues)}
    last = last_line(f)
    if last is not None:
        length, head, newline = last
        summary = head[:1] == b"{" and _SUMMARY.search(head) is not None
        if summary and length > MAX_LINE:
            return {"summary": "too long", "line": r.lines, "requests_only": False, "clues": [],
                    "text":
                    "the summary line (line %d, %d bytes) is longer than the readers' limit of "
                    "%d bytes (64 MiB) and was skipped: the process exited normally, but the "
                    "statistics and leaks below are what its events imply"
                    % (r.lines, length, MAX_LINE)}
        if not newline:
            clues.append("the last line (line %d) has no newline at its end: %s cut short"
                         % (r.lines, "a summary line" if summary else "it was"))
        elif summary:
            clues.append("the last line (line %d) is a summary line that cannot be read (see "
                         "the problems)" % r.lines)
    if run.seq_gaps:
        line, before, after = run.first_gap
        clues.append("seq jumps %d time(s), first at line %d (seq %d after %d): events were lost"
                     % (run.seq_gaps, line, after, before))
    text = "no summary line: the process was killed, crashed or the log was cut short"
    return {"summary": "none", "line": None, "requests_only": False, "clues": clues,
            "text": text + "".join("; " + c for c in clues)}


REQUESTS_ONLY = ("no summary line, as in every log of requests only (no pool decisions: not "
                 "written by cudapool's shim, which ends its logs with one): how the process ended "
                 "is not recorded")


def requests_only(end):
    """The ending of a log of requests only (allocs, no pool decision): without a summary line,
    no verdict of a kill; the clues stay."""
    if end["summary"] != "none":
        return end
    return dict(end, requests_only=True,
                text=REQUESTS_ONLY + "".join("; " + c for c in end["clues"]))
