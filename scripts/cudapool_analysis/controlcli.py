# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/controlcli.py: the subcommands that ask a running process (control.py,
docs/control.md), from the package's command line (cli.py) and scripts/cudapool:

    cudapool stats PID [--json | --prometheus | --csv]   its memory_summary() table per device,
                                       its settings, the blocks fenced now, the driver's figure
    cudapool empty-cache PID [--json]  its idle cached segments released; what was
    cudapool snapshot PID -o FILE [--force]   its memory_viz snapshot now (pickle; JSON when
                                       FILE ends in .json); an existing FILE only with --force
    cudapool top [--once] [--json | --csv] [--interval S]   every process of this user with a
                                       control socket; when none, why and what to do

PID: a process id, or the path of a control socket; --dir DIR: the control directory (default:
as the shim chooses it); --timeout S: the socket is waited for too. Exit status: 0; 1 no such
process, no socket (the message says why: controlproc.py), a failed request or an error answer
(a message on stderr); 2 a usage error (controlargs.py); 3 empty-cache refused (a stream capture
in progress). Not here: the options (controlargs.py), the protocol (control.py), the columns
(controltable.py), NVML (nvml.py).
"""

import json
import os
import re
import shutil
import sys
import textwrap
import time

from . import control, controlargs, controlproc, controltable, nvml
from .controltable import WIDTH
from .inputs import display_name
from .outfile import OutputError, OutputRefused, check_output, write_output
from .memviz_snapshot import write


control_parsers = controlargs.control_parsers    # cli.py takes it from here


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


def ask(args, request):
    """The answer to request; --timeout given: the socket is waited for too (control.ask)."""
    timeout = args.timeout if args.timeout is not None else 10.0
    return control.ask(args.pid, request, timeout, args.dir, wait=args.timeout is not None)


def stats(args):
    if args.prometheus:
        out(ask(args, "prometheus"))
        return 0
    if args.json or args.csv:
        answer = json.loads(ask(args, "stats json"))
        pid = answer.get("pid")
        devices = [d["device"] for d in answer.get("devices") or []]
        driver = driver_figures(pid, devices)
        if args.csv:
            out(controltable.csv_lines([controltable.process_row(pid, answer, driver[:2])],
                                       time.time()))
            return 0
        total, per_device, why_not = driver
        answer["driver_figures"] = "NVML" if why_not is None else "n/a: " + why_not
        answer["driver_used_bytes"] = total
        for d in answer.get("devices") or []:
            d["driver_used_bytes"] = per_device.get(d["device"])
        out(json.dumps(answer, indent=1) + "\n")
        return 0
    body = ask(args, "stats")
    pid = re.search(r"pid (\d+)", body.split("\n", 1)[0])
    devices = [int(m) for m in re.findall(r"^Device (\d+) now:", body, re.M)]
    out(body + driver_line(int(pid.group(1)) if pid else None, devices))
    return 0


def driver_figures(pid, devices):
    """(total, {ordinal: bytes or None}, why_not): nvml.figures' with why there is none."""
    nv = nvml.Nvml()
    try:
        reading = nv.read()
        environ = controlproc.environ_of(pid) if pid else None
        total, per_device = nvml.figures(reading, pid, devices, environ)
        why_not = nv.why_not
        if why_not is None and total is None:
            why_not = ("NVML does not list pid %s (no CUDA context yet, or another pid "
                       "namespace: a container)" % pid)
        return total, per_device, why_not
    finally:
        nv.close()


def driver_line(pid, devices):
    """The line `cudapool stats` adds after the shim's text: the driver's figure."""
    total, per_device, why_not = driver_figures(pid, devices)
    head = "Driver (what nvidia-smi shows for pid %s): " % pid
    if total is None:
        return head + "n/a: %s\n" % why_not
    parts = ["%s on device %d" % ("n/a" if per_device[d] is None else human(per_device[d]), d)
             for d in devices]
    return head + "; ".join(parts + ["%s (%d bytes) in all (NVML)" % (human(total), total)]) + "\n"


def empty_cache(args):
    answer = json.loads(ask(args, "empty-cache"))
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
    try:    # outfile.py: never over a log; an existing file only with --force
        check_output(args.output, [], "-o", force=args.force)
    except OutputRefused as e:
        args.parser.error(str(e))
    answer = json.loads(ask(args, "snapshot"))
    snap = control.live_snapshot(answer)
    with write_output(args.output, force=args.force) as f:
        write(snap, f, as_json=args.output.endswith(".json"))
    segments = len(snap["segments"])
    blocks = sum(1 for s in snap["segments"] for b in s["blocks"] if b["state"] != "inactive")
    print("cudapool snapshot: pid %s: %d segment%s, %d block%s in use or fenced: %s" % (
        answer.get("pid"), segments, "" if segments == 1 else "s", blocks,
        "" if blocks == 1 else "s", display_name(args.output)), file=sys.stderr)
    return 0


def top_figures(stats, largest_free_block):
    """A device's figures under short names (reserved, allocated, fenced, free, fragmentation):
    those tests/cli/figures_agree.sh compares with the report's; controltable.device_figures."""
    f = controltable.device_figures(stats, largest_free_block)
    return {k: f[k + "_bytes"] for k in ("reserved", "allocated", "fenced", "free")} | {
        "fragmentation": f["fragmentation"]}


def top_rows(dir_, nv):
    """The rows (controltable.process_row) of every process with a socket in dir_."""
    rows = []
    reading = nv.read()
    for pid, path in control.endpoints(dir_):
        try:
            answer = json.loads(control.ask(path, "stats json", 1.0))
        except (control.ControlError, ValueError) as e:
            row = controltable.process_row(pid, None)
            row["error"] = str(e)
            rows.append(row)
            continue
        devices = [d["device"] for d in answer.get("devices") or []]
        environ = controlproc.environ_of(pid)
        rows.append(controltable.process_row(pid, answer, nvml.figures(reading, pid, devices,
                                                                      environ)))
    return rows


def nobody(dir_):
    """What `cudapool top` says when it found no process: why, and what to do."""
    where = dir_ if os.path.isdir(dir_) else "%s (it does not exist)" % dir_
    text = ["No process of yours has a control socket in %s. A process is listed once it runs "
            "under the shim with CUDAPOOL_CONTROL=1 (CUDAPOOL_CONTROL=1 cudapool run -- PROGRAM) "
            "and has made its first CUDA call: its socket opens then. --dir DIR looks in "
            "another directory." % where]
    found = controlproc.shim_processes(dir_)
    for _, why in found[:10]:
        text.append(why[0].upper() + why[1:] + ".")
    if len(found) > 10:
        text.append("(and %d more processes under the shim)" % (len(found) - 10))
    return text


def top(args):
    nv = nvml.Nvml()
    tty = sys.stdout.isatty() and not args.once and not (args.json or args.csv)
    first = True
    try:
        while True:
            rows = top_rows(args.dir, nv)
            now, where = time.time(), control.directory(args.dir)
            hint = nobody(where) if not rows else []
            if args.json or args.csv:
                if hint and first:
                    print("\n".join(hint), file=sys.stderr)
                if args.json:
                    doc = controltable.top_json(rows, now, where, nv.why_not)
                    out(json.dumps(doc, indent=1 if args.once else None) + "\n")
                else:
                    out(controltable.csv_lines(rows, now, header=first))
            else:
                out(top_screen(rows, where, hint, nv.why_not, tty, args.once))
            first = False
            if args.once:
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
    finally:
        nv.close()


def top_screen(rows, where, hint, why_not, tty, once):
    width = shutil.get_terminal_size((WIDTH, 24)).columns if tty else WIDTH
    title = "cudapool top: %d process%s, %s (%s)" % (
        len(rows), "" if len(rows) == 1 else "es", time.strftime("%H:%M:%S"), where)
    lines = [title[:width]] + controltable.top_text(rows, width)
    for paragraph in hint:
        lines += textwrap.wrap(paragraph, width)
    if rows and why_not:
        lines += textwrap.wrap("DRIVER n/a: " + why_not, width)
    text = "\n".join(lines) + "\n"
    if tty:
        return "\x1b[H\x1b[2J" + text
    return text if once else text + "\n"


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
