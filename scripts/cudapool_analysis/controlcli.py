"""cudapool_analysis/controlcli.py: the subcommands that ask a running process (control.py,
docs/control.md), from the package's command line (cli.py) and scripts/cudapool:

    cudapool stats PID [--json | --prometheus]   its memory_summary() table per device, with its
                                                 settings and the blocks fenced now
    cudapool empty-cache PID [--json]            its idle cached segments released; what was
    cudapool snapshot PID -o FILE                its memory_viz snapshot now (pickle; JSON when
                                                 FILE ends in .json)
    cudapool top [--once] [--interval S]         every process of this user with a control socket

PID: a process id, or the path of a control socket; --dir DIR: the control directory (default:
as the shim chooses it). Exit status: 0; 1 no endpoint, a failed request or an error answer (a
message on stderr); 2 a usage error; 3 empty-cache refused (a stream capture in progress).
Not here: the protocol (control.py).
"""

import json
import os
import shutil
import sys
import time

from . import control
from .inputs import display_name
from .outfile import OutputError, OutputRefused, check_output, write_output
from .memviz_snapshot import write


def control_parsers(commands):
    def target(p):
        p.add_argument("pid", metavar="PID", help="the process id, or its control socket's path")
        p.add_argument("--dir", metavar="DIR", help="the control directory (default: "
                       "$XDG_RUNTIME_DIR/cudapool or /tmp/cudapool-UID)")
        p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                       help="seconds to wait for the connection and the answer (default 10)")
        p.set_defaults(parser=p)
        return p
    s = target(commands.add_parser(
        "stats", help="a running process's memory summary (CUDAPOOL_CONTROL)",
        description="Ask a process running under the shim with CUDAPOOL_CONTROL=1 for its "
        "statistics: the memory_summary() table per device, its settings, the blocks behind "
        "reuse fences now."))
    how = s.add_mutually_exclusive_group()
    how.add_argument("--json", action="store_true", help="the memory_stats() names, as JSON")
    how.add_argument("--prometheus", action="store_true",
                     help="the Prometheus text exposition format")
    e = target(commands.add_parser(
        "empty-cache", help="release a running process's idle cached segments",
        description="Release the idle cached segments of a running process, as "
        "torch.cuda.empty_cache() does (never a block in use or behind a reuse fence; refused "
        "during a stream capture); logged as empty_cache with your pid."))
    e.add_argument("--json", action="store_true", help="the answer as JSON")
    n = target(commands.add_parser(
        "snapshot", help="a running process's memory_viz snapshot",
        description="Write the segments and blocks of a running process now as a PyTorch memory "
        "snapshot (pytorch.org/memory_viz; docs/exports.md)."))
    n.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the snapshot: pickle, or JSON when FILE ends in .json")
    t = commands.add_parser(
        "top", help="every process of this user with a control socket",
        description="Every process of this user running under the shim with a control socket: "
        "per device its reserved and allocated memory, the fenced part (waiting for work on "
        "another stream: not free), the free part, its fragmentation (1 - largest free block / "
        "free) and the OOMs so far; refreshed.")
    t.add_argument("--once", action="store_true", help="print once and exit")
    t.add_argument("--interval", type=float, default=1.0, metavar="S",
                   help="seconds between refreshes (default 1)")
    t.add_argument("--dir", metavar="DIR", help="the control directory")
    t.set_defaults(parser=t)


def human(n):
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    v, u = float(n), 0
    while abs(v) >= 1024 and u < len(units) - 1:
        v, u = v / 1024, u + 1
    return "%d %s" % (v, units[u]) if u == 0 else "%.1f %s" % (v, units[u])


def out(text):
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def stats(args):
    request = "stats json" if args.json else "prometheus" if args.prometheus else "stats"
    body = control.ask(args.pid, request, args.timeout, args.dir)
    out(json.dumps(json.loads(body), indent=1) + "\n" if args.json else body)
    return 0


def empty_cache(args):
    answer = json.loads(control.ask(args.pid, "empty-cache", args.timeout, args.dir))
    if args.json:
        out(json.dumps(answer, indent=1) + "\n")
        return 3 if answer.get("refused") else 0
    pid = answer.get("pid")
    if answer.get("refused"):
        print("cudapool empty-cache: pid %s: refused: %s" % (pid, answer["refused"]),
              file=sys.stderr)
        return 3
    pools = answer.get("pools", [])
    total = sum(p["released_bytes"] for p in pools)
    segments = sum(p["released_segments"] for p in pools)
    lines = ["cudapool empty-cache: pid %s: released %s (%d bytes) in %d segment%s" % (
        pid, human(total), total, segments, "" if segments == 1 else "s")]
    for p in pools:
        line = "  device %d%s: released %s (%d bytes), %d segment%s; reserved now %s" % (
            p["device"], " context %d" % p["ctx"] if p["ctx"] else "", human(p["released_bytes"]),
            p["released_bytes"], p["released_segments"], "" if p["released_segments"] == 1 else "s",
            human(p["reserved_bytes"]))
        if p["fenced_blocks"]:
            line += "; kept %d block%s (%s) still behind reuse fences" % (
                p["fenced_blocks"], "" if p["fenced_blocks"] == 1 else "s", human(p["fenced_bytes"]))
        lines.append(line)
    if not pools:
        lines.append("  (no pool yet: nothing was allocated through the shim)")
    out("\n".join(lines) + "\n")
    return 0


def snapshot(args):
    try:
        check_output(args.output, [], "-o")    # outfile.py: never over a log
    except OutputRefused as e:
        args.parser.error(str(e))
    answer = json.loads(control.ask(args.pid, "snapshot", args.timeout, args.dir))
    snap = control.live_snapshot(answer)
    with write_output(args.output) as f:
        write(snap, f, as_json=args.output.endswith(".json"))
    segments = len(snap["segments"])
    blocks = sum(1 for s in snap["segments"] for b in s["blocks"] if b["state"] != "inactive")
    print("cudapool snapshot: pid %s: %d segment%s, %d block%s in use or fenced: %s" % (
        answer.get("pid"), segments, "" if segments == 1 else "s", blocks,
        "" if blocks == 1 else "s", display_name(args.output)), file=sys.stderr)
    return 0


WIDTH = 80
HEADER = "%7s %3s %10s %10s %10s %10s %5s %5s  %s" % (
    "PID", "DEV", "RESERVED", "ALLOCATED", "FENCED", "FREE", "FRAG", "OOMS", "COMMAND")


def top_figures(stats, largest_free_block):
    """A device's figures as docs/report.md ("Words and figures") defines them, from the pool's
    statistics: fenced = active - allocated (waiting for work on another stream: not free), free =
    reserved - allocated - fenced, fragmentation = 1 - largest free block / free (0 when nothing
    is free)."""
    reserved = stats["reserved_bytes.all.current"]
    allocated = stats["allocated_bytes.all.current"]
    fenced = max(0, stats.get("active_bytes.all.current", allocated) - allocated)
    free = max(0, reserved - allocated - fenced)
    return {"reserved": reserved, "allocated": allocated, "fenced": fenced, "free": free,
            "fragmentation": 1 - largest_free_block / free if free else 0.0}


def top_rows(dir_):
    rows = []
    for pid, path in control.endpoints(dir_):
        try:
            s = json.loads(control.ask(path, "stats json", 1.0))
        except (control.ControlError, ValueError) as e:
            rows.append("%7d %s" % (pid, ("  ? " + str(e))[:WIDTH - 9]))
            continue
        argv = s.get("argv") or [s.get("executable", "?")]
        command = " ".join([os.path.basename(argv[0])] + argv[1:])
        devices = s.get("devices") or []
        if not devices:
            rows.append(("%7d %3s %10s %10s %10s %10s %5s %5s  %s" % (
                pid, "-", "-", "-", "-", "-", "-", "-", command))[:WIDTH])
        for d in devices:
            st = d["stats"]
            f = top_figures(st, d["largest_free_block"])
            rows.append(("%7d %3d %10s %10s %10s %10s %4.0f%% %5d  %s" % (
                pid, d["device"], human(f["reserved"]), human(f["allocated"]),
                human(f["fenced"]), human(f["free"]), 100 * f["fragmentation"], st["num_ooms"],
                command))[:WIDTH])
    return rows


def top(args):
    if args.interval <= 0:
        args.parser.error("--interval must be above 0")
    tty = sys.stdout.isatty() and not args.once
    try:
        while True:
            rows = top_rows(args.dir)
            width = min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns) if tty else WIDTH
            title = "cudapool top: %d process%s, %s (%s)" % (
                len({r.split()[0] for r in rows}), "" if len(rows) == 1 else "es",
                time.strftime("%H:%M:%S"), control.directory(args.dir))
            text = "\n".join(line[:width] for line in [title, HEADER] + rows) + "\n"
            if tty:
                text = "\x1b[H\x1b[2J" + text
            elif not args.once:
                text += "\n"
            out(text)
            if args.once:
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


def run(args):
    try:
        return {"stats": stats, "empty-cache": empty_cache, "snapshot": snapshot,
                "top": top}[args.command](args)
    except control.ControlError as e:
        print("cudapool %s: %s" % (args.command, e), file=sys.stderr)
        return 1
    except (OutputError, ValueError) as e:
        print("cudapool %s: %s" % (args.command, e), file=sys.stderr)
        return 1


COMMANDS = ("stats", "empty-cache", "snapshot", "top")
