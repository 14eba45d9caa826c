# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/cli.py: the command line of the package,

    python3 -m cudapool_analysis report [--json] [--level LEVEL] LOG...  (PYTHONPATH=<repo>/scripts)
    python3 -m cudapool_analysis report --html OUT.html [--force] [--tune] [--level LEVEL] LOG...
    python3 -m cudapool_analysis export (--memory-viz OUT | --perfetto OUT) [--force] LOG...
    python3 -m cudapool_analysis stats|empty-cache|snapshot|top ...   (controlcli.py)

which `scripts/cudapool report` runs. report: one log's report (text, or with --json one object),
or for several logs (the ranks of one job) a section per log and the cross-rank table (--json:
{"logs": [...], "ranks": [...]}), its figures from one run of the analysis engine (engine.py:
cudapool-analyze reads each LOG once, checks it and draws the progress line). LOG: a file, plain
or compressed (gzip, zstd), or - for stdin (once). export: stdin, a FIFO or a device is read
once, into a private copy (inputs.py), and every LOG is checked by the reader before the long
work (reader.check_log). On a terminal each pass over a log draws a progress line on stderr
(progress.py; the engine's own); --quiet: none. --no-symbols (report, export): native frames
named library + offset, not from the libraries' own files (engine.SYMBOLS; docs/report.md, "Naming
native frames"). --level (report): the level of reserved bytes whose time above the report
gives, a fraction of the peak or a size (held.py; docs/report.md, "Held over time"). export: one
log as a PyTorch memory_viz snapshot
(memviz.py), or logs as one Perfetto trace (perfetto.py). report --html: the logs as one
self-contained HTML page (htmlreport.py), from one run of the engine too. OUT (of --html and
export) follows outfile.py's rule: never an input or a log, written whole or not at all, mode
0600, an existing file kept unless --force is given. -h/--help: the command's usage on stdout;
--version: "cudapool VERSION" (version.py) on stdout; both exit 0.

Exit status: 0 when every log could be read, 1 when one could not (a clear message on stderr for
each, nothing on stdout) or OUT exists without --force, 2 on a usage error ("cudapool report:
what is wrong" and the usage line on stderr: Parser). Not here: what the report computes (the
engine; its Python oracle, tests/oracle/report.py, is test code, not shipped) or prints
(text.py).
"""

import argparse
import json
import os
import signal
import sys

from . import engine, progress
from . import vocabulary as v
from .engine import EngineError, EngineOptions, LogsRefused, run_engine
from .held import level_arg
from .inputs import LogError
from .verdict import AUTO_TUNE_EVENTS, verdict
from .version import add_version
from .text import several_text, text_report
from .tools import ToolError
from .exportcli import export, export_parser
from .controlcli import COMMANDS as CONTROL_COMMANDS, control_parsers, run as run_control


class Parser(argparse.ArgumentParser):
    """argparse's parser (the subcommands' too: add_subparsers makes them of this class) with a
    usage error said as the C++ tools say it: "cudapool report: what is wrong", then the usage
    line, on stderr, exit 2."""

    def error(self, message):
        self.exit(2, "%s: %s\n%s" % (self.prog, message, self.format_usage()))


def parser():
    p = Parser(prog="cudapool", description="Reads cudapool allocation logs "
               "(cudapool.log/1, docs/log-format.md).")
    commands = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    r = commands.add_parser(
        "report", help="peaks, fragmentation, request sizes, leaks of one or more logs",
        description="Report on cudapool allocation logs (cudapool.log/1): statistics, peaks, "
        "fragmentation at the reserved peak, request sizes, out-of-memory events, leaks. Several "
        "logs (the ranks of one job): a section per log and a cross-rank table.")
    r.add_argument("--json", action="store_true", help="print the report as one JSON object")
    r.add_argument("--html", metavar="OUT", help="write the report as one self-contained HTML "
                   "page (charts, segment maps, allocation sites) to OUT")
    r.add_argument("--force", action="store_true", help="--html: replace OUT when it exists "
                   "(without it an existing OUT is kept and the command fails)")
    r.add_argument("--tune", action="store_true", help="run cudapool tune beside the report "
                   "whatever the logs' length (by default it runs when the logs are files of "
                   "at most %d events in all)" % AUTO_TUNE_EVENTS)
    r.add_argument("--no-tune", action="store_true", help="do not run cudapool tune (the "
                   "verdict then names no setting)")
    r.add_argument("--quiet", action="store_true", help="no progress line (drawn on stderr only "
                   "when it is a terminal)")
    r.add_argument("--level", metavar="LEVEL", type=level_arg, default=None,
                   help="the level of reserved bytes whose time above the report gives: a "
                   "fraction of the peak (default 0.5: half the peak reserved) or a size (10G, "
                   "512MiB; G = GiB = 2^30 bytes)")
    r.add_argument("--no-symbols", action="store_true", help="name native frames as library + "
                   "offset only, not with the functions and source lines of the libraries' own "
                   "files (read where the log's build ids match)")
    add_version(r)
    r.add_argument("logs", nargs="+", metavar="LOG", help="a log file (plain, gzip or zstd), or "
                   "- for stdin")
    r.set_defaults(parser=r)
    export_parser(commands)
    control_parsers(commands)
    return p


def with_verdicts(paths, doc, tune):
    """`cudapool report --json`'s object (engine.reports()'s), each log's report with its
    "verdict" (verdict.py)."""
    for i, x in enumerate(doc["logs"]):
        x["report"]["verdict"] = verdict(x["report"], x.get("page"), tune, i)
    if len(paths) == 1:
        return doc["logs"][0]["report"]
    return {"schema": v.REPORT_SCHEMA, "logs": [x["report"] for x in doc["logs"]],
            "ranks": doc["ranks"], "notes": doc["notes"]}


def report(args):
    if args.tune and args.no_tune:
        args.parser.error("--tune and --no-tune: one at a time")
    if args.force and args.html is None:
        args.parser.error("--force is an option of --html")
    if args.html is not None:
        from .htmlreport import html_report
        return html_report(args)
    if args.logs.count("-") > 1:
        args.parser.error("- (stdin) can be given once")
    try:
        # one run of cudapool-analyze (engine.py), its page data too (the verdict's sites);
        # --tune: cudapool tune beside it (an input read once handed to both), else after it
        # when the logs are short files (htmlreport.tuned)
        from .htmlreport import analysed, tuned
        if args.tune:
            doc, tuning = analysed(args.logs, True)
        else:
            doc = run_engine(args.logs, EngineOptions(page=True))
            tuning = tuned(args.logs, doc, False, args.no_tune)
        out = with_verdicts(args.logs, doc, tuning)
    except LogsRefused:              # its messages are on stderr
        return 1
    except (EngineError, ToolError, LogError) as e:
        print("cudapool report: %s" % e, file=sys.stderr)
        return 1
    if not args.json:
        out = text_report(out) if len(args.logs) == 1 else several_text(out)
    try:
        if args.json:
            json.dump(out, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:   # a reader that stopped early (| head): no complaint at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def exit_on(signum, frame):
    """SIGTERM and SIGHUP end the command as an exception would: its temporary files go."""
    raise SystemExit(128 + signum)


def main(argv=None):
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra:   # named by the command's own parser, with its usage line
        getattr(args, "parser", p).error("unrecognized arguments: %s" % " ".join(extra))
    if getattr(args, "quiet", False):
        progress.ENABLED = False
    if getattr(args, "no_symbols", False):
        engine.SYMBOLS = False
    if getattr(args, "level", None) is not None:
        engine.LEVEL = args.level
    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) == signal.SIG_DFL:
            signal.signal(s, exit_on)
    try:
        if args.command == "report":
            return report(args)
        if args.command == "export":
            return export(args)
        if args.command in CONTROL_COMMANDS:
            return run_control(args)
    except KeyboardInterrupt:
        return 130
    return 2
