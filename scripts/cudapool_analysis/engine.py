# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/engine.py: the figures of `cudapool report` and `cudapool report --json`, from
one run of the analysis engine (cudapool-analyze, docs/analysis-format.md, found by tools.py;
$CUDAPOOL_ANALYZE overrides): each log read once, in C++, its document ("cudapool.analysis/1")
turned into the report's own objects: one log's report (`cudapool report --json`'s object), or for
several logs {"schema": "cudapool.report/1", "logs", "ranks", "notes"} (what the test oracle
tests/oracle/report.py several() makes).

The engine reads the logs itself: a file, plain or compressed, or - for this process's stdin
(inherited, read once); it draws the progress line on stderr when that is a terminal (--quiet
passed on) and says why a log cannot be read in the report's own words, on stderr, starting with
"cudapool report" (--as). Not here: printing (text.py, cli.py); the Python computation of the same
figures (tests/oracle/report.py: read_log), the test oracle tests/cli/analyze_agree.sh compares the
engine with (not shipped).
"""

import json
import re
import subprocess
import sys

from . import progress
from . import vocabulary as v
from .tools import _dies_with_parent, tool_command

NAME = "cudapool report"
# Whether the engine names native frames from the libraries' own files (functions, source lines:
# tools/analyze/symbolizer.h); --no-symbols of report and export turns it off (cli.py), as --quiet
# turns off progress.ENABLED.
SYMBOLS = True
# The level of reserved bytes whose time above the report gives (--level of report: a fraction of
# the peak or a size, held.py); None: the engine's default, half the peak.
LEVEL = None


class EngineError(Exception):
    """The engine could not be run, or failed without saying why a log cannot be read; the
    message says which program and what happened."""


class LogsRefused(Exception):
    """The engine refused a log: its message(s) are already on stderr (exit status 1)."""


class EngineOptions:
    """How one run of the engine reads its logs and what it prints besides the reports (what
    run_engine() takes with the paths). page: the page's data too. extra: an export's option
    (--perfetto P,I or --memory-viz N: export()). names: {path: the name to show} for logs handed
    over as /dev/fd/N (their descriptors are passed on; fanout.py): the document and the messages
    call them by that name, and the engine draws no progress line (the copying thread does).
    started: called once the engine's process runs (before its output is read). stdin: the
    descriptor the engine reads - from (default: this process's stdin). name: what its messages
    start with; what: the output that is not made when it fails."""

    def __init__(self, page=False, extra=(), names=None, started=None, stdin=None, name=NAME,
                 what="report"):
        self.page = page
        self.extra = list(extra)
        self.names = names or {}
        self.started = started
        self.stdin = stdin
        self.name = name
        self.what = what

    @classmethod
    def export(cls, *option):
        """The options of `cudapool export`: the export's engine option (e.g. "--memory-viz",
        "100000"), its messages starting with "cudapool export"."""
        return cls(extra=option, name="cudapool export", what="export")

    def command(self, paths):
        """The engine's command line for the logs at paths."""
        cmd = tool_command("cudapool-analyze") + ["--as", self.name]
        if not self.page:
            cmd.append("--no-page")
        cmd += self.extra
        if not progress.ENABLED or self.names:
            cmd.append("--quiet")
        if not SYMBOLS:
            cmd.append("--no-symbols")
        if LEVEL is not None:
            cmd += ["--level", LEVEL]
        return cmd + list(paths)


def run_engine(paths, options=None):
    """The engine's document (a dict) for the logs at paths, in one run under options (an
    EngineOptions; default: the reports alone). Raises LogsRefused when a log cannot be read (said
    on stderr), EngineError when the engine cannot run or fails."""
    o = options or EngineOptions()
    cmd = o.command(paths)
    # stderr a terminal: the engine draws its progress line there itself; else its messages are
    # read here (and passed on) so that a failure without one is still said.
    terminal = progress._stderr_is_terminal() and not o.names
    try:
        proc = subprocess.Popen(cmd, stdin=o.stdin, stdout=subprocess.PIPE,
                                stderr=None if terminal else subprocess.PIPE,
                                pass_fds=_descriptors(o.names), preexec_fn=_dies_with_parent())
    except OSError as e:
        raise EngineError("cannot run %s: %s" % (cmd[0], e.strerror or e)) from None
    if o.started is not None:
        o.started()
    out, err = proc.communicate()
    if err:
        sys.stderr.write(_named(err.decode("utf-8", "replace"), o.names))
        sys.stderr.flush()
    rc = proc.returncode
    if rc == 1 and (terminal or err):
        raise LogsRefused()
    if rc != 0:
        how = "was killed by signal %d" % -rc if rc < 0 else "exited with status %d" % rc
        raise EngineError("the analysis engine %s %s%s; no %s" % (
            cmd[0], how, "" if terminal or err else " without a message", o.what))
    return _document(out, cmd[0], len(paths), o)


def _document(out, program, logs, o):
    """The engine's output read as its document of logs logs, the logs handed over as /dev/fd/N
    called by their names."""
    try:
        doc = json.loads(out)
        if doc.get("schema") != v.ANALYSIS_SCHEMA or len(doc["logs"]) != logs:
            raise ValueError("not a %s document of %d log(s)" % (v.ANALYSIS_SCHEMA, logs))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise EngineError("the analysis engine %s printed no document this %s reads (%s); "
                          "no %s" % (program, o.what, str(e)[:200], o.what)) from None
    names = o.names
    if names:
        for x in doc["logs"]:
            for part in ("report", "page"):
                if isinstance(x.get(part), dict) and x[part].get("log") in names:
                    x[part]["log"] = names[x[part]["log"]]
        for row in doc.get("ranks") or []:
            if row.get("log") in names:
                row["log"] = names[row["log"]]
        doc["notes"] = [_named(n, names) for n in doc.get("notes") or []]
    return doc


def _descriptors(names):
    """The descriptors N of the paths /dev/fd/N in names."""
    return tuple(int(p[len("/dev/fd/"):]) for p in names)


def _named(text, names):
    """text with every /dev/fd/N of names replaced by its name."""
    if not names:
        return text
    return re.sub(r"/dev/fd/[0-9]+", lambda m: names.get(m.group(0), m.group(0)), text)


def reports(paths):
    """`cudapool report --json`'s object of the logs at paths: one log's report, or for several
    the reports, the cross-rank table and its notes. Raises what run_engine() raises."""
    doc = run_engine(paths)
    if len(paths) == 1:
        return doc["logs"][0]["report"]
    return {"schema": v.REPORT_SCHEMA, "logs": [x["report"] for x in doc["logs"]],
            "ranks": doc["ranks"], "notes": doc["notes"]}

