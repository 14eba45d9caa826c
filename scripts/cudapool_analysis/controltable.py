# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/controltable.py: the figures of live processes as one table, its columns
defined once (COLUMNS) for `cudapool top` (text, --json, --csv) and `cudapool stats PID --csv`
(docs/control.md, "The columns"):

    process_row(pid, answer, driver)   -> a process's dict: pid, command, driver_used_bytes,
                                          devices (each a dict of the device columns)
    top_text(rows, width)              -> the rows of `cudapool top` (80 columns)
    csv_lines(rows, when, header)      -> CSV text, one row per process x device
    top_json(rows, when, directory, why_not) -> `cudapool top --json`'s object

The figures are docs/report.md's words: fenced = active - allocated (waiting for work on another
stream: not free), free = reserved - allocated - fenced, fragmentation = 1 - largest free block /
free (0 when nothing is free). Not here: asking the processes (control.py), NVML (nvml.py).
"""

import csv
import io
import os

# (key in JSON and CSV, level, text header or None (not in the text), text width, meaning)
COLUMNS = (
    ("time", "row", None, 0, "Unix time of the reading, seconds"),
    ("pid", "process", "PID", 7, "the process id"),
    ("device", "device", "DEV", 3, "the CUDA device ordinal, as the process numbers it"),
    ("reserved_bytes", "device", "RESERVED", 8, "what the pool holds from the driver"),
    ("driver_used_bytes", "device", "DRIVER", 8,
     "the driver's figure for the process on that GPU (NVML; what nvidia-smi shows): n/a "
     "without NVML or a sure match"),
    ("allocated_bytes", "device", "ALLOCATED", 9, "in the program's blocks"),
    ("active_bytes", "device", None, 0, "allocated + fenced"),
    ("fenced_bytes", "device", "FENCED", 8, "freed, waiting for work on another stream"),
    ("free_bytes", "device", "FREE", 8, "reserved - allocated - fenced"),
    ("largest_free_block_bytes", "device", None, 0, "the largest free block"),
    ("fragmentation", "device", "FRAG", 4, "1 - largest free block / free (0..1)"),
    ("ooms", "device", "OOMS", 4, "num_ooms"),
    ("command", "process", "COMMAND", 0, "the program and its arguments"),
    ("error", "process", None, 0, "why the process did not answer (empty when it did)"),
)
CSV_HEADER = [c[0] for c in COLUMNS]
TEXT = [c for c in COLUMNS if c[2]]
DEVICE_KEYS = [c[0] for c in COLUMNS if c[1] == "device"]
WIDTH = 80


def device_figures(stats, largest_free_block):
    """A device's figures (docs/report.md, "Words and figures") from the pool's statistics."""
    reserved = stats["reserved_bytes.all.current"]
    allocated = stats["allocated_bytes.all.current"]
    active = stats.get("active_bytes.all.current", allocated)
    fenced = max(0, active - allocated)
    free = max(0, reserved - allocated - fenced)
    return {"reserved_bytes": reserved, "allocated_bytes": allocated, "active_bytes": active,
            "fenced_bytes": fenced, "free_bytes": free,
            "largest_free_block_bytes": largest_free_block,
            "fragmentation": 1 - largest_free_block / free if free else 0.0,
            "ooms": stats.get("num_ooms", 0)}


def command_of(answer):
    argv = answer.get("argv") or [answer.get("executable", "?")]
    return " ".join([os.path.basename(str(argv[0]))] + [str(a) for a in argv[1:]])


def process_row(pid, answer, driver=(None, {})):
    """answer: a `stats json` answer (None when the process did not answer); driver: nvml.figures'
    (total, {ordinal: bytes})."""
    total, per_device = driver
    row = {"pid": pid, "command": None, "driver_used_bytes": total, "error": None, "devices": []}
    if answer is None:
        return row
    row["command"] = command_of(answer)
    for d in answer.get("devices") or []:
        figures = device_figures(d["stats"], d["largest_free_block"])
        dev = {"device": d["device"]}
        dev.update(figures)
        dev["driver_used_bytes"] = per_device.get(d["device"])
        row["devices"].append({k: dev[k] for k in DEVICE_KEYS})
    return row


def size(n):
    """A byte count in at most 8 characters: 6.0 MiB, 162 MiB, 1023 MiB; n/a for None."""
    if n is None:
        return "n/a"
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    v, u = float(n), 0
    while abs(v) >= 1024 and u < len(units) - 1:
        v, u = v / 1024, u + 1
    if u == 0:
        return "%d B" % v
    return ("%.1f %s" if abs(v) < 100 else "%.0f %s") % (v, units[u])


def text_cell(key, value):
    if key in ("pid", "device", "ooms"):
        return "-" if value is None else str(value)
    if key == "fragmentation":
        return "-" if value is None else "%.0f%%" % (100 * value)
    if key == "command":
        return value or "?"
    return "-" if value is None and key != "driver_used_bytes" else size(value)


def text_line(values):
    cells = []
    for key, _, header, width, _ in TEXT:
        cell = text_cell(key, values.get(key))
        cells.append(("  " if key == "command" else " " if cells else "") + (
            cell if key == "command" else cell.rjust(width)))
    return "".join(cells)


def top_header():
    return "".join(("  " if key == "command" else " " if i else "") + (
        header if key == "command" else header.rjust(width))
        for i, (key, _, header, width, _) in enumerate(TEXT))


def top_text(rows, width=WIDTH):
    lines = [top_header()]
    for r in rows:
        if r["error"]:
            lines.append("%7d   ? %s" % (r["pid"], r["error"]))
            continue
        devices = r["devices"] or [{}]
        for d in devices:
            values = {"pid": r["pid"], "command": r["command"]}
            values.update(d)
            if not d:
                values["driver_used_bytes"] = r["driver_used_bytes"]
            lines.append(text_line(values))
    return [line[:width] for line in lines]


def csv_cell(key, value):
    if value is None:
        return "n/a" if key == "driver_used_bytes" else ""
    if key == "time":
        return "%.3f" % value
    if key == "fragmentation":
        return "%.4f" % value
    return str(value)


def csv_lines(rows, when, header=True):
    f = io.StringIO()
    w = csv.writer(f, lineterminator="\n")
    if header:
        w.writerow(CSV_HEADER)
    for r in rows:
        for d in r["devices"] or [{}]:
            values = {"time": when, "pid": r["pid"], "command": r["command"], "error": r["error"]}
            values.update(d)
            if not d:
                values["driver_used_bytes"] = r["driver_used_bytes"]
            w.writerow([csv_cell(key, values.get(key)) for key in CSV_HEADER])
    return f.getvalue()


def top_json(rows, when, directory, why_not):
    return {"schema": "cudapool.top/1", "time": round(when, 3), "directory": directory,
            "driver_figures": "NVML" if why_not is None else "n/a: " + why_not,
            "processes": rows}
