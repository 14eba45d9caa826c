# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/htmlreport.py: `cudapool report --html OUT.html [--tune|--no-tune] LOG...`: one
self-contained HTML file that opens offline in any browser and asks the network for nothing.

The page is page/report.html with, inlined at write time: the charting library uPlot 1.6.32
(pinned in web/package.json, installed by `npm ci --prefix web`, which scripts/cudapool's setup
step runs; an install has it in page/uplot/), page/report.css, page/held.js (the card "Held over
time") and page/report.js (which draw everything else: the timelines with uPlot, the segment maps
on canvases of their own), and the data as
JSON in a <script type="application/json"> (every "<" escaped). The data comes from one run of
the analysis engine (engine.run_engine, EngineOptions(page=True): cudapool-analyze reads each log
once, plain or compressed, stdin and FIFOs included, says why a log cannot be read and draws the
progress line):
per log its `page` object, their charts on one time axis (timeaxis.one_clock(): several logs count
from the earliest start among them); several logs add its cross-rank table (`ranks`, `notes`).
Each log's page object gets its verdict (verdict.py), which the page shows first, and its bytes
held over time (held.py page_held: the report's figures). cudapool tune
--json of all the logs (the C++ tool, tools.py; when it fails, a note instead) runs by default
after the engine when the logs are files short enough (verdict.auto_tune_why_not); --tune runs it
whatever their length, beside the engine: an input readable once (stdin, a FIFO) is then read
here once and handed to both through pipes (fanout.py); --no-tune not at all. The file is written by outfile.py's rule
(never over an input or a log, whole or not at all, mode 0600).

Not here: the figures (the engine; tests/oracle/pagedata.py's log_data is its Python oracle, for
the agreement tests only, not installed), the drawing (page/report.js).
"""

import datetime
import json
import os
import re
import subprocess
import sys
import threading

from . import vocabulary as v
from .engine import EngineError, EngineOptions, LogsRefused, run_engine
from .fanout import Fanout, needs_fanout
from .held import page_held
from .inputs import LogError, display_name
from .outfile import OutputError, OutputRefused, check_output, write_output
from .timeaxis import one_clock
from .tools import ToolError, _dies_with_parent, tool_command
from .verdict import auto_tune_why_not, verdict

PAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "page")
WEB_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(PAGE_DIR))), "web")
UPLOT_VERSION = "1.6.32"
UPLOT_FILES = ("uPlot.iife.min.js", "uPlot.min.css", "LICENSE")
PAGE_SCHEMA = "cudapool.page/1"
INSTALL_HINT = "npm ci --prefix %s" % WEB_DIR


class PageError(Exception):
    """The page cannot be written; the message says why and what to do."""


def uplot_dir():
    """The directory holding uPlot's files: $CUDAPOOL_UPLOT_DIR when set (only there), else an
    install's page/uplot/, else the source tree's web/node_modules/uplot/dist (its LICENSE one
    level up). Raises PageError."""
    if os.environ.get("CUDAPOOL_UPLOT_DIR"):
        places = [os.environ["CUDAPOOL_UPLOT_DIR"]]
    else:
        places = [os.path.join(PAGE_DIR, "uplot"),
                  os.path.join(WEB_DIR, "node_modules", "uplot", "dist")]
    for d in places:
        if all(os.path.isfile(os.path.join(d, f)) for f in UPLOT_FILES[:2]):
            return d
    raise PageError("the charting library uPlot %s is not installed (looked in %s): install it "
                    "with `%s` (scripts/cudapool's setup step runs it; an install made by "
                    "cmake --install before it lacks the library: install again after it)"
                    % (UPLOT_VERSION, ", ".join(places), INSTALL_HINT))


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def assets():
    """{name: text} of everything the page inlines. Raises PageError."""
    d = uplot_dir()
    js = read_text(os.path.join(d, UPLOT_FILES[0]))
    if "(v%s)" % UPLOT_VERSION not in js[:200]:
        raise PageError("%s is not uPlot %s (the version web/package.json pins): run `%s`"
                        % (os.path.join(d, UPLOT_FILES[0]), UPLOT_VERSION, INSTALL_HINT))
    license_text = ""
    for p in (os.path.join(d, "LICENSE"), os.path.join(os.path.dirname(d), "LICENSE")):
        if os.path.isfile(p):
            license_text = read_text(p)
            break
    out = {"UPLOT_JS": js, "UPLOT_CSS": read_text(os.path.join(d, UPLOT_FILES[1])),
           "UPLOT_LICENSE": license_text.replace("*/", "* /"),
           "REPORT_JS": read_text(os.path.join(PAGE_DIR, "report.js")),
           "HELD_JS": read_text(os.path.join(PAGE_DIR, "held.js")),
           "REPORT_CSS": read_text(os.path.join(PAGE_DIR, "report.css")),
           "TEMPLATE": read_text(os.path.join(PAGE_DIR, "report.html"))}
    for name in ("UPLOT_JS", "REPORT_JS", "HELD_JS", "UPLOT_CSS", "REPORT_CSS"):
        if re.search(r"</(script|style)", out[name], re.I):
            raise PageError("%s holds a closing tag: it cannot be inlined" % name)
    return out


def tune_command(args):
    """The argv of `cudapool tune --json` of the logs handed to it as args. Raises PageError."""
    try:
        return tool_command("cudapool-tune") + ["--json"] + list(args)
    except ToolError as e:
        raise PageError("--tune: %s" % e) from None


class Tuning:
    """cudapool tune running beside the engine, its output read by a thread of its own (so that
    it never waits on a full pipe). Raises PageError when it cannot run."""

    def __init__(self, cmd, fds, names):
        self.cmd, self.names, self.done = cmd, names, {}
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, pass_fds=tuple(fds),
                                         preexec_fn=_dies_with_parent())
        except OSError as e:
            raise PageError("--tune: cannot run %s: %s" % (cmd[0], e.strerror or e)) from None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        self.done["out"], self.done["err"] = self.proc.communicate()

    def end(self):
        """Ends it (the page is not written)."""
        self.proc.kill()
        self.reader.join()

    def result(self):
        """tune's JSON (a dict), the logs named as given. Raises PageError."""
        self.reader.join()
        rc, out, err = self.proc.returncode, self.done["out"], self.done["err"]
        if rc != 0:
            raise PageError("--tune: `%s` failed (exit %d): %s" % (
                " ".join(self.cmd[:3]), rc, err.decode("utf-8", "replace").strip()[-600:]))
        try:
            tune = json.loads(out)
        except ValueError as e:
            raise PageError("--tune: cudapool tune printed no JSON (%s)" % e) from None
        for log in tune.get("logs") or [] if isinstance(tune, dict) else []:
            if isinstance(log, dict) and log.get("path") in self.names:
                log["path"] = self.names[log["path"]]
        return tune


def tuned(paths, doc, force, off):
    """cudapool tune --json of the logs after the engine's run (doc), when asked (force) or by
    default when verdict.auto_tune_why_not() allows; {"skipped": why} or {"error": why} when it
    does not run or fails; None with --no-tune."""
    if off:
        return None
    why = None if force else auto_tune_why_not(paths, sum(x["report"]["events"]
                                                           for x in doc["logs"]))
    if why is not None:
        return {"skipped": why}
    try:
        return Tuning(tune_command(paths), (), {}).result()
    except PageError as e:          # said when asked for; by default the verdict says it
        if force:
            print("cudapool report: %s; the verdict names no setting" % e, file=sys.stderr)
        return {"error": str(e)}


def analysed(paths, tune=False):
    """(the engine's document of the logs at paths; with --tune, tune's JSON or {"error": why}
    when it fails, else None): one run of the engine, and with --tune cudapool tune beside it.
    An input that can be read only once (stdin, a FIFO) is then read here once and handed to
    both through pipes (fanout.py). Raises engine.LogsRefused, engine.EngineError, ToolError,
    LogError."""
    if not tune:
        return run_engine(paths, EngineOptions(page=True)), None
    fans = []
    try:
        engine_args, tune_args, names, fanned, tune_fds = [], [], {}, {}, []
        stdin = None
        for path in paths:
            shown = display_name(path)
            if path == "-":         # the engine's stdin: its own name, its own progress line
                fan = Fanout(path, shown, 2, draws=False)
                fans.append(fan)
                e, t, stdin = "-", "/dev/fd/%d" % fan.fds[1], fan.fds[0]
                tune_fds.append(fan.fds[1])
            elif needs_fanout(path):
                fan = Fanout(path, shown, 2)
                fans.append(fan)
                e, t = ("/dev/fd/%d" % fd for fd in fan.fds)
                fanned[e] = shown
                tune_fds.append(fan.fds[1])
            else:
                e = t = path
            engine_args.append(e)
            tune_args.append(t)
            names[t] = shown
        try:
            tuning = Tuning(tune_command(tune_args), tune_fds, names)
        except PageError as e:      # its read ends are closed with the others: no reader there
            tuning = e

        def started():              # both programs hold their read ends: the copying begins
            for fan in fans:
                fan.start()
        try:
            doc = run_engine(engine_args, EngineOptions(page=True, names=fanned, started=started,
                                                       stdin=stdin))
            for fan in fans:
                fan.join()
                if fan.error():
                    raise LogError(fan.error())
        except BaseException:
            if isinstance(tuning, Tuning):
                tuning.end()
            raise
    finally:
        for fan in fans:
            fan.close()
    try:
        if isinstance(tuning, PageError):
            raise tuning
        return doc, tuning.result()
    except PageError as e:          # a page without its tuning is still the page
        print("cudapool report: %s; the page has no tuning section" % e, file=sys.stderr)
        return doc, {"error": str(e)}


def page_data(paths, tune=False, no_tune=False):
    """The page's data: every log's (the engine's page objects, each with its verdict,
    verdict.py), the time axis (timeaxis.one_clock()), the cross-rank table for several, tune's
    JSON: with --tune run beside the engine, by default after it when the logs are short enough
    (tuned()); {"error"|"skipped": why} when it fails or does not run, None with --no-tune.
    Raises what analysed() raises."""
    doc, tuning = analysed(paths, tune)
    if not tune:
        tuning = tuned(paths, doc, False, no_tune)
    logs = [x["page"] for x in doc["logs"]]
    for i, x in enumerate(doc["logs"]):
        x["page"]["verdict"] = verdict(x["report"], x["page"], tuning, i)
        x["page"]["held"] = page_held(x["report"])
    multi = len(paths) > 1
    clock = one_clock(logs)
    return {"schema": PAGE_SCHEMA, "report_schema": v.REPORT_SCHEMA,
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M:%S UTC"),
            "words": v.FIGURE_WORDS,
            "logs": logs, "clock": clock,
            "ranks": doc["ranks"] if multi else None,
            "rank_notes": doc["notes"] if multi else [],
            "tune": tuning}


def script_json(data):
    """JSON that is safe inside <script>: no "<" at all (so no "</script>", no "<!--")."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def render(data, parts):
    """The page's text: the template with each @@NAME@@ replaced once, in one pass (nothing
    inlined is searched for markers again)."""
    title = "cudapool report: " + ", ".join(os.path.basename(l["log"]) for l in data["logs"])
    values = dict(parts, DATA=script_json(data), TITLE=html_escape(title[:200]))

    def one(m):
        return values[m.group(1)]
    return re.sub(r"@@([A-Z_]+)@@", one, parts["TEMPLATE"])


def html_escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def write_page(out, paths, tune=False, no_tune=False, force=False):
    """Writes the page of the logs at paths to out (outfile.write_output: whole or not at all,
    mode 0600; an existing file replaced only with force). Returns its size in bytes. Raises
    reader.LogError, PageError or outfile.OutputError (OutputExists)."""
    parts = assets()          # before the long work: a missing library is said at once
    text = render(page_data(paths, tune, no_tune), parts)
    with write_output(out, "w", force) as f:
        f.write(text)
    return len(text.encode("utf-8"))


def html_report(args):
    """`report --html OUT [--tune] LOG...` (cli.py's report() hands it over): exit status 0, 1
    when a log cannot be read or the page cannot be written (a message on stderr), 2 on a usage
    error (OUT an input or a log: outfile.check_output); an existing OUT without --force: 1. A
    failing --tune leaves its section out (a note in the page, a line on stderr): still 0."""
    if args.json:
        args.parser.error("--json and --html: one at a time")
    if args.logs.count("-") > 1:
        args.parser.error("- (stdin) can be given once")
    try:
        check_output(args.html, args.logs, "--html", args.force)
    except OutputRefused as e:
        args.parser.error(str(e))
    except OutputError as e:        # OUT exists: --force replaces it
        print("cudapool report: %s" % e, file=sys.stderr)
        return 1
    errors = []
    try:
        size = write_page(args.html, args.logs, args.tune, args.no_tune, args.force)
    except LogsRefused:             # the engine's messages are on stderr
        return 1
    except (LogError, PageError, OutputError, EngineError, ToolError) as e:
        errors.append(str(e))
    if errors:
        for e in errors:
            print("cudapool report: %s" % e, file=sys.stderr)
        return 1
    print("cudapool report: wrote %s (%d KiB, %d log%s)" % (
        display_name(args.html), (size + 1023) // 1024, len(args.logs),
        "" if len(args.logs) == 1 else "s"), file=sys.stderr)
    return 0
