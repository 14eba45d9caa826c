"""cudapool_analysis/engine.py: the figures of `cudapool report` and `cudapool report --json`, from
one run of the analysis engine (cudapool-analyze, docs/analysis-format.md, found by tools.py;
$CUDAPOOL_ANALYZE overrides): each log read once, in C++, its document ("cudapool.analysis/1")
turned into the report's own objects: one log's report (`cudapool report --json`'s object), or for
several logs {"schema": "cudapool.report/1", "logs", "ranks", "notes"} (what report.several()
makes).

The engine reads the logs itself: a file, plain or compressed, or - for this process's stdin
(inherited, read once); it draws the progress line on stderr when that is a terminal (--quiet
passed on) and says why a log cannot be read in the report's own words, on stderr, starting with
"cudapool report" (--as). Not here: printing (text.py, cli.py); the Python computation of the same
figures (report.read_log), kept as the oracle tests/cli/analyze_agree.sh compares the engine with.
"""

import json
import re
import subprocess
import sys

from . import progress
from . import vocabulary as v
from .tools import _dies_with_parent, tool_command

NAME = "cudapool report"


class EngineError(Exception):
    """The engine could not be run, or failed without saying why a log cannot be read; the
    message says which program and what happened."""


class LogsRefused(Exception):
    """The engine refused a log: its message(s) are already on stderr (exit status 1)."""


def run_engine(paths, page=False, names=None, started=None, stdin=None, extra=(), name=NAME,
               what="report"):
    """The engine's document (a dict) for the logs at paths, in one run. Raises LogsRefused when
    a log cannot be read (said on stderr), EngineError when the engine cannot run or fails.
    names: {path: the name to show} for logs handed over as /dev/fd/N (their descriptors are
    passed on; fanout.py): the document and the messages call them by that name, and the engine
    draws no progress line (the copying thread does). started: called once the engine's process
    runs (before its output is read). stdin: the descriptor the engine reads - from (default:
    this process's stdin). extra: more options (export: --perfetto); name: what its messages
    start with; what: the output that is not made when it fails."""
    names = names or {}
    cmd = tool_command("cudapool-analyze") + ["--as", name]
    if not page:
        cmd.append("--no-page")
    cmd += list(extra)
    if not progress.ENABLED or names:
        cmd.append("--quiet")
    cmd += list(paths)
    # stderr a terminal: the engine draws its progress line there itself; else its messages are
    # read here (and passed on) so that a failure without one is still said.
    terminal = progress._stderr_is_terminal() and not names
    try:
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=None if terminal else subprocess.PIPE,
                                pass_fds=_descriptors(names), preexec_fn=_dies_with_parent())
    except OSError as e:
        raise EngineError("cannot run %s: %s" % (cmd[0], e.strerror or e)) from None
    if started is not None:
        started()
    out, err = proc.communicate()
    if err:
        sys.stderr.write(_named(err.decode("utf-8", "replace"), names))
        sys.stderr.flush()
    rc = proc.returncode
    if rc == 1 and (terminal or err):
        raise LogsRefused()
    if rc != 0:
        how = "was killed by signal %d" % -rc if rc < 0 else "exited with status %d" % rc
        raise EngineError("the analysis engine %s %s%s; no %s" % (
            cmd[0], how, "" if terminal or err else " without a message", what))
    try:
        doc = json.loads(out)
        if doc.get("schema") != v.ANALYSIS_SCHEMA or len(doc["logs"]) != len(paths):
            raise ValueError("not a %s document of %d log(s)" % (v.ANALYSIS_SCHEMA, len(paths)))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise EngineError("the analysis engine %s printed no document this %s reads (%s); "
                          "no %s" % (cmd[0], what, str(e)[:200], what)) from None
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

