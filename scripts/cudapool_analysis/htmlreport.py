"""cudapool_analysis/htmlreport.py: `cudapool report --html OUT.html [--tune] LOG...`: one
self-contained HTML file that opens offline in any browser and asks the network for nothing.

The page is page/report.html with, inlined at write time: the charting library uPlot 1.6.32
(pinned in web/package.json, installed by `npm ci --prefix web`, which scripts/cudapool's setup
step runs; an install has it in page/uplot/), page/report.css and page/report.js (which draw
everything: the timelines with uPlot, the segment maps on canvases of their own), and the data as
JSON in a <script type="application/json"> (every "<" escaped). The data per log is
pagedata.log_data()'s, their charts on one time axis (pagedata.one_clock(): several logs count
from the earliest start among them); several logs add report.several()'s cross-rank table;
--tune adds `cudapool tune --json` of all the logs (the C++ tool, tools.py; when it fails, a note
instead). The file is written by outfile.py's rule (never over an input or a log, whole or not at
all, mode 0600).

Not here: the figures (report.py and the passes under it), the drawing (page/report.js).
"""

import datetime
import json
import os
import re
import sys

from . import vocabulary as v
from .pagedata import log_data, one_clock
from .inputs import LogError, display_name, tool_argument
from .outfile import OutputError, OutputRefused, check_output, write_output
from .reader import check_logs
from .report import several
from .tools import ToolError, run_tool, tool_command

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
           "REPORT_CSS": read_text(os.path.join(PAGE_DIR, "report.css")),
           "TEMPLATE": read_text(os.path.join(PAGE_DIR, "report.html"))}
    for name in ("UPLOT_JS", "REPORT_JS", "UPLOT_CSS", "REPORT_CSS"):
        if re.search(r"</(script|style)", out[name], re.I):
            raise PageError("%s holds a closing tag: it cannot be inlined" % name)
    return out


def tune_json(paths):
    """`cudapool tune --json LOG...` as a dict, the logs named as given. Raises PageError."""
    try:
        cmd = tool_command("cudapool-tune") + ["--json"]
    except ToolError as e:
        raise PageError("--tune: %s" % e) from None
    names, fds = {}, []
    for path in paths:                   # a log read from stdin or a FIFO: its copy (inputs.py)
        arg, passed = tool_argument(path)
        names[arg] = display_name(path)
        cmd.append(arg)
        fds.extend(passed)
    try:
        p = run_tool(cmd, pass_fds=fds)
    except OSError as e:
        raise PageError("--tune: cannot run %s: %s" % (cmd[0], e.strerror or e)) from None
    if p.returncode != 0:
        raise PageError("--tune: `%s` failed (exit %d): %s" % (
            " ".join(cmd[:3]), p.returncode,
            p.stderr.decode("utf-8", "replace").strip()[-600:]))
    try:
        tune = json.loads(p.stdout)
    except ValueError as e:
        raise PageError("--tune: cudapool tune printed no JSON (%s)" % e) from None
    for log in tune.get("logs") or [] if isinstance(tune, dict) else []:
        if isinstance(log, dict) and log.get("path") in names:
            log["path"] = names[log["path"]]
    return tune


def tune_or_note(paths):
    """tune_json(), or when it fails {"error": why} (the page says so instead of the tuning
    section) and one line on stderr: a page without its tuning is still the page."""
    try:
        return tune_json(paths)
    except PageError as e:
        print("cudapool report: %s; the page has no tuning section" % e, file=sys.stderr)
        return {"error": str(e)}


def page_data(paths, tune=False):
    """The page's data: every log's (pagedata.log_data()), the time axis (pagedata.one_clock()),
    the cross-rank table for several, tune's JSON with --tune ({"error": why} when it fails).
    Raises reader.LogError."""
    logs, reports, rows = [], [], []
    for i, path in enumerate(paths):
        data, rep, row = log_data(path, i)
        logs.append(data)
        reports.append(rep)
        rows.append(row)
    multi = several(reports, rows) if len(paths) > 1 else None
    clock = one_clock(logs)
    return {"schema": PAGE_SCHEMA, "report_schema": v.REPORT_SCHEMA,
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M:%S UTC"),
            "logs": logs, "clock": clock,
            "ranks": multi["ranks"] if multi else None,
            "rank_notes": multi["notes"] if multi else [],
            "tune": tune_or_note(paths) if tune else None}


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


def write_page(out, paths, tune=False):
    """Writes the page of the logs at paths to out (outfile.write_output: whole or not at all,
    mode 0600). Returns its size in bytes. Raises reader.LogError, PageError or
    outfile.OutputError."""
    parts = assets()          # before the long work: a missing library is said at once
    text = render(page_data(paths, tune), parts)
    with write_output(out, "w") as f:
        f.write(text)
    return len(text.encode("utf-8"))


def html_report(args):
    """`report --html OUT [--tune] LOG...` (cli.py's report() hands it over): exit status 0, 1
    when a log cannot be read or the page cannot be written (a message on stderr), 2 on a usage
    error (OUT an input or a log: outfile.check_output). A failing --tune leaves its section out
    (a note in the page, a line on stderr): still 0."""
    if args.html is None:
        args.parser.error("--tune goes with --html OUT")
    if args.json:
        args.parser.error("--json and --html: one at a time")
    if args.logs.count("-") > 1:
        args.parser.error("- (stdin) can be given once")
    try:
        check_output(args.html, args.logs, "--html")
    except OutputRefused as e:
        args.parser.error(str(e))
    errors = check_logs(args.logs)[1]   # before the long work, and before any replay
    if not errors:
        try:
            size = write_page(args.html, args.logs, args.tune)
        except (LogError, PageError, OutputError) as e:
            errors.append(str(e))
    if errors:
        for e in errors:
            print("cudapool report: %s" % e, file=sys.stderr)
        return 1
    print("cudapool report: wrote %s (%d KiB, %d log%s)" % (
        display_name(args.html), (size + 1023) // 1024, len(args.logs),
        "" if len(args.logs) == 1 else "s"), file=sys.stderr)
    return 0
