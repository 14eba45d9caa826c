#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/log_check.py: checks one cudapool.log/1 file against docs/log-format.md, and optionally
that cudapool-replay reproduces the statistics of its summary line. A test helper shared by the
CPU tests (tests/cli/log_integration.sh, fake driver) and the GPU suite (tests/gpu/run.sh); not a
user tool (users have `cudapool report` and `cudapool replay`).

  log_check.py LOG [--replay BIN] [--no-summary] [--min-allocs N]

LOG: plain, gzip or zstd (decoded by cudapool-cat: the one beside BIN, else the one
cudapool_analysis/tools.py finds).

Checks: every line is complete JSON; the header's fields and types; every event's common fields,
types, and the fields its action requires (the names, kinds and actions come from
scripts/cudapool_analysis/vocabulary.py); seq is 1..N in file order; the summary line (unless
--no-summary): its fields, seq = events + 1, no write failure or lost record, its modules (when
written) sorted address ranges. With --replay: runs `BIN --json LOG` and compares every
statistic of every device with the summary line; the replay must see no malformed line and no
unknown free. Exit 0 and one line of counts on stdout when all holds; exit 1 with the first
problem on stderr otherwise.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

# The names and kinds of the format, from the package's vocabulary (checked against the C++ by
# tests/cli/vocabulary_check.sh), as (field, Python type) pairs.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from cudapool_analysis import tools, vocabulary  # noqa: E402


def typed_fields(fields):
    return [(name, vocabulary.PYTHON_TYPES[kind]) for name, kind in fields]


HEADER = typed_fields(vocabulary.HEADER_FIELDS)
HEADER_DEVICE = typed_fields(vocabulary.HEADER_DEVICE_FIELDS)
COMMON = typed_fields(vocabulary.EVENT_FIELDS)
OPTIONAL = typed_fields(vocabulary.OPTIONAL_FIELDS)
HEX_FIELDS = [name for name, kind in vocabulary.OPTIONAL_FIELDS if kind == vocabulary.HEX]
ACTIONS = vocabulary.KNOWN_ACTIONS
SUMMARY = typed_fields(vocabulary.SUMMARY_FIELDS)


class Bad(Exception):
    pass


def need(cond, *what):
    if not cond:
        raise Bad(" ".join(str(w) for w in what))


def is_hex(v):
    return isinstance(v, str) and v.startswith("0x") and len(v) > 2 and all(
        c in "0123456789abcdef" for c in v[2:])


def typed(value, t):
    # bool is an int in Python: an integer field must not be true/false.
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, t)


def check_modules(modules):
    """The summary's modules, when written: {base, end, path[, bias, build_id]} entries, base <
    end, sorted by base, at most 4096."""
    if modules is None:
        return
    need(isinstance(modules, list) and len(modules) <= 4096, "summary modules: not a list of at "
         "most 4096 entries")
    last = -1
    for m in modules:
        need(isinstance(m, dict) and {"base", "end", "path"} <= set(m)
             and set(m) <= {n for n, _ in vocabulary.MODULE_FIELDS}
             and is_hex(m["base"]) and is_hex(m["end"]) and isinstance(m["path"], str)
             and is_hex(m.get("bias", "0x0")) and isinstance(m.get("build_id", ""), str),
             "summary module not {base, end, path[, bias, build_id]}:", m)
        base, end = int(m["base"], 16), int(m["end"], 16)
        need(last <= base < end, "summary module out of order or empty:", m)
        last = base


def check_event(e, n):
    for key, t in COMMON:
        need(typed(e.get(key), t), "line", n, "field", key, "missing or not", t.__name__, ":", e)
    need(e["action"] in ACTIONS, "line", n, "unknown action", e["action"])
    need(is_hex(e["ptr"]), "line", n, "ptr not a hex string:", e["ptr"])
    for key, t in OPTIONAL:
        if key in e:
            need(typed(e[key], t), "line", n, "field", key, "not", t.__name__, ":", e)
    for key in HEX_FIELDS:
        if key in e:
            need(is_hex(e[key]), "line", n, key, "not a hex string:", e[key])
    a = e["action"]
    if a == "alloc":
        need(typed(e.get("block_size"), int) and e["block_size"] >= e["size"], "line", n,
             "alloc without a block_size >= size:", e)
        need(is_hex(e.get("segment")), "line", n, "alloc without a segment:", e)
        need("cache_hit" in e, "line", n, "alloc without cache_hit:", e)
        for addr in e.get("backtrace", []):
            need(is_hex(addr), "line", n, "backtrace entry not hex:", addr)
    else:
        need("cache_hit" not in e, "line", n, "cache_hit on", a)
    if a in ("free_requested", "free_completed"):
        need(typed(e.get("block_size"), int), "line", n, a, "without block_size:", e)
    if a in ("segment_alloc", "segment_free", "segment_map", "segment_unmap"):
        need(e["size"] > 0, "line", n, a, "of 0 bytes")


def read_log(path, cat):
    """The log's plain bytes: a compressed one (vocabulary.COMPRESSIONS, by its first bytes)
    decoded by cat, the cudapool-cat binary (the tools' one decoder: log/read/input.h)."""
    with open(path, "rb") as f:
        raw = f.read()
    packed = next((c for c in vocabulary.COMPRESSIONS if raw.startswith(c.magic)), None)
    if packed is None:
        return raw
    need(packed.read, "a %s file, which the tools do not read: %s it first" %
         (packed.name, packed.decompressor))
    need(cat is not None, "a %s file, and no cudapool-cat to decode it" % packed.name)
    run = subprocess.run([cat, "--quiet", path], capture_output=True, check=False)
    need(run.returncode == 0, "cudapool-cat:", run.stderr.decode(errors="replace").strip())
    return run.stdout


def check(path, want_summary, min_allocs, cat):
    raw = read_log(path, cat)
    need(raw.endswith(b"\n"), "the file does not end with a newline (a line was cut)")
    objs = []
    for n, line in enumerate(raw.split(b"\n")[:-1], 1):
        try:
            objs.append(json.loads(line))
        except ValueError as err:
            raise Bad("line %d is not JSON (%s): %r" % (n, err, line[:200]))
    need(objs, "empty log")
    h = objs[0]
    for key, t in HEADER:
        need(typed(h.get(key), t), "header field", key, "missing or not", t.__name__)
    need(h["schema"] == vocabulary.LOG_SCHEMA, "schema", h["schema"])
    for d in h["devices"]:
        need(all(typed(d.get(key), t) for key, t in HEADER_DEVICE), "header device entry", d)
    has_summary = objs[-1].get("action") == vocabulary.SUMMARY_ACTION
    events = objs[1:-1] if has_summary else objs[1:]
    actions = collections.Counter()
    for i, e in enumerate(events):
        check_event(e, i + 2)
        need(e["seq"] == i + 1, "line", i + 2, "has seq", e["seq"], "want", i + 1)
        actions[e["action"]] += 1
    need(actions["alloc"] >= min_allocs, "only", actions["alloc"], "alloc events, want at least",
         min_allocs)
    summary = objs[-1] if has_summary else None
    if want_summary:
        need(summary is not None, "no summary line")
        for key, t in SUMMARY:
            need(typed(summary.get(key), t), "summary field", key, "missing or not", t.__name__)
        need(summary["events"] == len(events), "summary says", summary["events"], "events, file has",
             len(events))
        need(summary["seq"] == len(events) + 1, "summary seq", summary["seq"])
        check_modules(summary.get("modules"))
        errors = summary["log_errors"]
        need(errors.get("write_failed") is False and errors.get("records_lost") == 0,
             "log errors:", errors)
        for dev, d in summary["devices"].items():
            need(isinstance(d.get("stats"), dict) and "allocated_bytes.all.current" in d["stats"],
                 "summary device", dev, "without stats")
    return events, actions, summary


def compare_replay(binary, path, summary):
    out = subprocess.run([binary, "--json", path], capture_output=True, text=True)
    need(out.returncode == 0, "replay exit", out.returncode, out.stderr[:400])
    rep = json.loads(out.stdout)
    need(rep["malformed_lines"] == 0, "replay: malformed lines", rep["malformed_lines"])
    need(rep["unknown_frees"] == 0, "replay: unknown frees", rep["unknown_frees"])
    compared = 0
    for dev, d in summary["devices"].items():
        got = rep["devices"].get(dev, {}).get("stats")
        need(got is not None, "replay has no device", dev)
        diff = {k: (v, got.get(k)) for k, v in d["stats"].items() if got.get(k) != v}
        need(not diff, "device", dev, "replay differs (log, replay):",
             dict(list(diff.items())[:8]))
        compared += len(d["stats"])
    return compared, len(summary["devices"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("--replay", help="cudapool-replay binary: compare its statistics")
    ap.add_argument("--no-summary", action="store_true", help="the log may end without a summary")
    ap.add_argument("--min-allocs", type=int, default=0)
    args = ap.parse_args()
    try:
        beside = os.path.join(os.path.dirname(args.replay), "cudapool-cat") if args.replay else ""
        cat = beside if os.access(beside, os.X_OK) else tools.find_tool("cudapool-cat")
        events, actions, summary = check(args.log, not args.no_summary, args.min_allocs, cat)
        line = "%d events (%s)" % (len(events), ", ".join(
            "%s %d" % kv for kv in sorted(actions.items())))
        if args.replay:
            need(summary is not None, "--replay needs a summary line")
            stats, devices = compare_replay(args.replay, args.log, summary)
            if devices == 0:
                line += "; nothing to replay against: the summary lists no pool (its context was dropped)"
            else:
                line += "; replay equal on %d statistics of %d device(s)" % (stats, devices)
        print(line)
    except Bad as bad:
        print("log_check: %s: %s" % (args.log, bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
