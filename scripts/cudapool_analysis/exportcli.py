# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/exportcli.py: the `export` subcommand of the package's command line (cli.py),

    cudapool export --memory-viz OUT [--max-entries N] [--force] LOG          (memviz.py)
    cudapool export --perfetto OUT [--max-points N] [--max-instants N] [--force] LOG...
                                                                        (perfetto.py)

LOG: a file, plain or compressed (gzip, zstd), or - for stdin (once; read once, as every input:
inputs.py). --quiet: no progress line. --no-symbols: memory_viz frames named library + offset,
not from the libraries' own files (their functions and source lines). OUT follows outfile.py's
rule: never one of the logs or any cudapool log (a usage error), written whole or not at all
(nothing half-written is left behind, also when a log turns out unreadable half way), mode 0600;
an existing OUT is kept ("OUT exists: give --force to replace it", exit 1) unless --force is
given. -h/--help, --version: cli.py.
--memory-viz writes a pickle (protocol 4), or JSON when OUT ends in .json. Notes about what the
export left out or made up go to stderr.

Exit status: 0 when written; 1 when a log cannot be read (a clear message on stderr), OUT exists
(without --force) or cannot be written; 2 on a usage error. Not here: what either file holds
(memviz.py, perfetto.py).
"""

import os
import sys

from . import memviz, perfetto
from . import vocabulary as v
from .engine import EngineError, EngineOptions, LogsRefused, run_engine
from .export import ExportError
from .inputs import LogError, display_name
from .outfile import OutputError, OutputRefused, check_output, write_output
from .version import add_version
from .terminal import MAX_NOTE, cut
from .tools import ToolError


def export_parser(commands):
    e = commands.add_parser(
        "export", help="a log as a PyTorch memory_viz snapshot, or logs as a Perfetto trace",
        description="Write cudapool allocation logs in the formats of other viewers "
        "(docs/exports.md): --memory-viz OUT, a snapshot for pytorch.org/memory_viz (one LOG; "
        "pickle, or JSON when OUT ends in .json); --perfetto OUT, Chrome trace event JSON for "
        "ui.perfetto.dev and chrome://tracing (one process per LOG).")
    what = e.add_mutually_exclusive_group(required=True)
    what.add_argument("--memory-viz", metavar="OUT", help="write a memory_viz snapshot to OUT")
    what.add_argument("--perfetto", metavar="OUT", help="write a Perfetto trace to OUT")
    e.add_argument("--max-entries", type=int, metavar="N", default=None,
                   help="--memory-viz: keep the last N trace entries of each device (default "
                   "%d, as PyTorch's recorder keeps; 0 keeps all)" % memviz.LARGE_TRACE)
    e.add_argument("--max-points", type=int, metavar="N", default=None,
                   help="--perfetto: counter points per device (default %d; every peak is "
                   "kept)" % perfetto.MAX_POINTS)
    e.add_argument("--max-instants", type=int, metavar="N", default=None,
                   help="--perfetto: instant events per device and action (default %d)"
                   % perfetto.MAX_INSTANTS)
    e.add_argument("--force", action="store_true", help="replace OUT when it exists (without "
                   "it an existing OUT is kept and the command fails)")
    e.add_argument("--quiet", action="store_true", help="no progress line (drawn on stderr only "
                   "when it is a terminal)")
    e.add_argument("--no-symbols", action="store_true", help="--memory-viz: name native frames "
                   "as library + offset only, not with the functions and source lines of the "
                   "libraries' own files")
    add_version(e)
    e.add_argument("logs", nargs="+", metavar="LOG", help="a log file (plain, gzip or zstd), or "
                   "- for stdin")
    e.set_defaults(parser=e)


def say_trace_bound(max_entries, by_default):
    """The trace's bound, said before the work (a long log's export takes a while)."""
    if max_entries:
        print("cudapool export: keeping each device's last %d trace entries%s (--max-entries N "
              "to change, 0 keeps all)" % (max_entries, ", as PyTorch's recorder does by default"
                                           if by_default else ""), file=sys.stderr)
    else:
        print("cudapool export: keeping every trace entry (--max-entries 0): memory and the "
              "snapshot grow with the log", file=sys.stderr)


def memviz_snapshot(log, max_entries):
    """(snapshot, notes) of the log at path log (- for stdin), from one run of the engine (it
    reads the log and replays one of requests only). Raises what engine.run_engine raises, and
    ExportError (memviz.from_engine)."""
    name = display_name(log)
    options = EngineOptions.export("--memory-viz", str(max_entries))
    part = run_engine([log], options)["logs"][0]["memviz"]
    snap, notes = memviz.from_engine(part, max_entries, name)
    if part["ended_early"]:
        notes.insert(0, part["ended_early"])
    if part["replayed"]:
        notes.insert(0, "%s has no pool decisions: its requests were replayed under its settings "
                     "(cudapool replay); the segments and blocks are the replay's" % name)
    notes.extend(fenced_note(snap, name))
    return snap, notes


def fenced_note(snap, name):
    """The note on the fenced blocks at the end, in the words of docs/report.md ("Words and
    figures"): memory_viz draws them as active_pending_free, which are not free."""
    pending = [b for s in snap["segments"] for b in s["blocks"]
               if b["state"] == "active_pending_free"]
    if not pending:
        return []
    n = len(pending)
    return ["%s: %d block%s (%d bytes) fenced at the end (%s: not free) are memory_viz's "
            "active_pending_free" % (name, n, "" if n == 1 else "s",
                                     sum(b["size"] for b in pending), v.FIGURE_WORDS["fenced"])]


def usage_checks(args):
    """The usage errors (argparse's exit 2), before anything is read; then OUT's existence
    (outfile.OutputExists, an OutputError: exit 1, the caller's)."""
    error = args.parser.error
    option = "--memory-viz" if args.memory_viz is not None else "--perfetto"
    out = args.memory_viz if args.memory_viz is not None else args.perfetto
    if args.logs.count("-") > 1:
        error("- (stdin) can be given once")
    if args.memory_viz is not None:
        if len(args.logs) != 1:
            error("--memory-viz takes exactly one LOG (%d given)" % len(args.logs))
        for name in ("max_points", "max_instants"):
            if getattr(args, name) is not None:
                error("--%s is an option of --perfetto" % name.replace("_", "-"))
        if args.max_entries is not None and args.max_entries < 0:
            error("--max-entries must not be negative (0 keeps all)")
    else:
        if args.max_entries is not None:
            error("--max-entries is an option of --memory-viz")
        if args.max_points is not None and args.max_points < 10:
            error("--max-points must be at least 10")
        if args.max_instants is not None and args.max_instants < 0:
            error("--max-instants must not be negative")
    try:
        check_output(out, args.logs, option, args.force)
    except OutputRefused as e:
        error(str(e))
    return out


def export(args):
    try:
        out = usage_checks(args)
    except OutputError as e:         # OUT exists: --force replaces it
        print("cudapool export: %s" % e, file=sys.stderr)
        return 1
    try:
        if args.memory_viz is not None:
            log = args.logs[0]
            max_entries = memviz.LARGE_TRACE if args.max_entries is None else args.max_entries
            say_trace_bound(max_entries, args.max_entries is None)
            snap, notes = memviz_snapshot(log, max_entries)
            with write_output(out, force=args.force) as f:
                memviz.write(snap, f, as_json=out.endswith(".json"))
            what = "a memory_viz snapshot: %d segments, %d trace entries" % (
                len(snap["segments"]), sum(len(t) for t in snap["device_traces"]))
        else:      # the engine reads and checks the logs (perfetto.export)
            with write_output(out, "w", args.force) as f:
                notes = perfetto.export(
                    args.logs, f,
                    perfetto.MAX_POINTS if args.max_points is None else args.max_points,
                    perfetto.MAX_INSTANTS if args.max_instants is None else args.max_instants)
            what = "a Perfetto trace of %d log%s" % (len(args.logs),
                                                    "" if len(args.logs) == 1 else "s")
    except LogsRefused:              # the engine said why on stderr
        return 1
    except (LogError, ExportError, OutputError, EngineError, ToolError) as e:
        print("cudapool export: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("cudapool export: %s: %s" % (display_name(getattr(e, "filename", None) or out),
                                           e.strerror or e), file=sys.stderr)
        return 1
    for note in notes:
        print("cudapool export: note: %s" % cut(note, MAX_NOTE), file=sys.stderr)   # escaped when made
    size = os.stat(out).st_size if os.path.isfile(out) else None
    print("cudapool export: wrote %s (%s%s)" % (display_name(out), what, "" if size is None
                                                else ", %d bytes" % size), file=sys.stderr)
    return 0
