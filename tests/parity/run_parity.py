#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""run_parity.py: replays the parity cases through PyTorch and through cudapool and compares.

    python3 tests/parity/run_parity.py [--cases a,b] [--out DIR] [--timeout S] [--budget-s S]

For each case of tests/parity/cases.json, in order and one at a time:
  1. torch_replay.py CASE in a fresh process: PyTorch's own allocator on the real GPU; reports the
     card's total_memory, the failed allocations and torch.cuda.memory_stats(0);
  2. $CUDAPOOL replay --json --conf CONF --device-memory TOTAL TRACE, where CONF is the case conf
     plus ",per_process_memory_fraction:F" when the case has a fraction and TOTAL is the total
     memory torch reported;
  3. compares: every key present in both stats dicts must be equal, and so must failed_allocs.

Writes DIR/parity-table.md (markdown table) and DIR/parity-results.json (both sides in full, the
differences), after every case so a run cut short still leaves them. The last line printed is
"parity: N cases, N equal, N differ". Exit status 1 when any case differs or fails, else 0.

Environment:
  CUDAPOOL          cudapool command (default scripts/cudapool, from the repo root); may hold
                    arguments, e.g. "python3 stub.py"
  TORCH_REPLAY_CMD  command replacing "python3 tests/parity/torch_replay.py" (for testing the
                    harness without a GPU); it gets the case name, or --build-only
"""

import argparse
import json
import tempfile
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_paths import resolve_trace  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Keys cudapool must report for a case to count as equal (present in every torch 2.11 result).
REQUIRED_KEYS = [
    "allocated_bytes.all.peak",
    "allocated_bytes.all.current",
    "reserved_bytes.all.peak",
    "reserved_bytes.all.current",
    "active_bytes.all.peak",
    "inactive_split_bytes.all.peak",
    "requested_bytes.all.peak",
    "segment.all.peak",
    "allocation.all.allocated",
    "num_alloc_retries",
    "num_ooms",
    "num_device_alloc",
    "num_device_free",
]

TAIL = 4000  # characters of a failing command's output kept in the results


def cudapool_conf(conf, fraction):
    """The conf string cudapool gets (make_traces.py has the same function)."""
    if fraction is None:
        return conf
    extra = "per_process_memory_fraction:" + repr(float(fraction))
    return conf + "," + extra if conf else extra


def run_cmd(cmd, timeout):
    """(rc, stdout, stderr, seconds, timed_out); rc is None when the command could not start."""
    t0 = time.time()
    env = dict(os.environ)
    # Neither side may pick the conf up from the environment; torch_replay sets its own.
    for var in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING"):
        env.pop(var, None)
    try:
        p = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, universal_newlines=True, errors="replace")
        return p.returncode, p.stdout, p.stderr, time.time() - t0, False
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        err = e.stderr or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        if isinstance(err, bytes):
            err = err.decode(errors="replace")
        return -9, out, err, time.time() - t0, True
    except OSError as e:
        return None, "", "%s: %s" % (cmd[0], e), time.time() - t0, False


def parse_json_output(text):
    """The JSON object a tool printed: all of stdout, else the last line that is an object."""
    text = text.strip()
    if not text:
        return None
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else None
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
                if isinstance(obj, dict):
                    return obj
            except ValueError:
                continue
    start = text.find("{")
    if start >= 0:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
            return obj if isinstance(obj, dict) else None
        except ValueError:
            pass
    return None


def compare(tstats, cstats):
    """(diffs [(key, torch, cudapool)], keys only torch has, keys only cudapool has)."""
    diffs = []
    for k in sorted(set(tstats) & set(cstats)):
        if tstats[k] != cstats[k]:
            diffs.append((k, tstats[k], cstats[k]))
    only_t = sorted(set(tstats) - set(cstats))
    only_c = sorted(set(cstats) - set(tstats))
    return diffs, only_t, only_c


def fmt_bytes(n):
    if not isinstance(n, (int, float)):
        return "?"
    return "%.1f MiB" % (n / 1048576.0)


def fmt_pair_bytes(t, c):
    a, b = fmt_bytes(t), fmt_bytes(c)
    if a == b and t != c:  # same when rounded: show the bytes
        a, b = str(t), str(c)
    return "%s / %s" % (a, b)


def fmt_pair(t, c):
    if t == c:
        return str(t)
    return "%s / %s" % ("?" if t is None else t, "?" if c is None else c)


def md_escape(s):
    return str(s).replace("|", "\\|")


def table_row(r):
    conf = "`%s`" % md_escape(r["conf"]) if r["conf"] else "(default)"
    frac = "" if r["fraction"] is None else repr(r["fraction"])
    t = (r.get("torch") or {}).get("stats") or {}
    c = (r.get("cudapool") or {}).get("stats") or {}
    status = r["status"]
    if status in ("equal", "differ"):
        def g(d, k):
            return d.get(k)

        cells = [
            fmt_pair_bytes(g(t, "reserved_bytes.all.peak"), g(c, "reserved_bytes.all.peak")),
            fmt_pair_bytes(g(t, "allocated_bytes.all.peak"), g(c, "allocated_bytes.all.peak")),
            fmt_pair(g(t, "num_device_alloc"), g(c, "num_device_alloc")),
            fmt_pair(g(t, "num_device_free"), g(c, "num_device_free")),
            fmt_pair(g(t, "num_ooms"), g(c, "num_ooms")),
            fmt_pair(g(t, "num_alloc_retries"), g(c, "num_alloc_retries")),
        ]
        if status == "equal":
            verdict = "yes"
        else:
            parts = []
            if r["diffs"]:
                parts.append("%d keys differ" % len(r["diffs"]))
            if r["missing_required"]:
                parts.append("%d keys missing" % len(r["missing_required"]))
            if r["failed_allocs"]["torch"] != r["failed_allocs"]["cudapool"]:
                parts.append("failed allocs %s / %s" % (r["failed_allocs"]["torch"],
                                                        r["failed_allocs"]["cudapool"]))
            verdict = "**" + ", ".join(parts or ["differ"]) + "**"
    else:
        cells = [""] * 6
        verdict = "**%s**" % status.replace("_", " ")
        r.setdefault("segments_at_torch_address", "")
    fresh = r.get("fresh_diffs")
    fresh_cell = "" if fresh is None else ("yes" if fresh == 0 and r.get(
        "fresh_failed_allocs") == r["failed_allocs"]["torch"] else "%d keys differ" % fresh)
    return "| %s | %s | %s | %s | %s | %s | %s |" % (
        r["name"], conf, frac, " | ".join(cells), r.get("segments_at_torch_address", ""),
        verdict, fresh_cell)


TABLE_HEAD = (
    "| case | conf | fraction | peak reserved (torch / cudapool) "
    "| peak allocated (torch / cudapool) | device allocs | device frees | OOMs | retries "
    "| segments at torch's addresses | all stats equal | all stats equal, simulated addresses |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def summary_line(results):
    n = len(results)
    eq = sum(1 for r in results if r["status"] == "equal")
    return "parity: %d cases, %d equal, %d differ" % (n, eq, n - eq)


def write_outputs(out_dir, results, env_info, final):
    rows = [table_row(r) for r in results]
    lines = []
    if env_info:
        lines.append("Device: %s, total_memory %s bytes; torch %s (CUDA %s)." % (
            env_info.get("device_name"), env_info.get("total_memory"), env_info.get("torch"),
            env_info.get("cuda")))
        lines.append("")
    lines.append(TABLE_HEAD)
    lines += rows
    lines.append("")
    lines.append(summary_line(results) + ("" if final else " (run in progress)"))
    table = "\n".join(lines) + "\n"
    tmp = os.path.join(out_dir, "parity-table.md.tmp")
    with open(tmp, "w") as f:
        f.write(table)
    os.replace(tmp, os.path.join(out_dir, "parity-table.md"))
    doc = {
        "schema": "cudapool.parity-results/1",
        "final": final,
        "environment": env_info,
        "summary": summary_line(results),
        "cases": results,
    }
    tmp = os.path.join(out_dir, "parity-results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "parity-results.json"))
    return table


def tail(s):
    return s[-TAIL:] if s else ""


def save_segment_trace(out_dir, name, tres):
    """Moves torch's segment trace (driver addresses; large) out of the results into its own
    file, segment-traces/CASE.json, keeping its status and length in the results."""
    trace = tres.pop("segment_trace", None)
    if not trace:
        return
    d = os.path.join(out_dir, "segment-traces")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".json"), "w") as f:
        json.dump({"case": name, "fields": ["action", "address", "size"], "events": trace}, f,
                  separators=(",", ":"))
        f.write("\n")
    tres["segment_trace_events"] = len(trace)


def write_addressed_trace(out_dir, name, trace_path, segment_trace):
    """The case's trace with one segment_alloc event per segment PyTorch got from the driver, in
    order, right after the header: cudapool replay then places its segments at those addresses
    (first in, first out) for as long as its own segments match them in size."""
    if not segment_trace:
        return None
    d = os.path.join(tempfile.gettempdir(), "cudapool-parity-addressed")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".jsonl")
    with open(trace_path) as src, open(path, "w") as dst:
        first = src.readline()
        dst.write(first)
        for action, address, size in segment_trace:
            if action == "segment_alloc":
                dst.write('{"action":"segment_alloc","dev":0,"ptr":"0x%x","size":%d}\n'
                          % (int(address), int(size)))
        for line in src:
            dst.write(line)
    return path


def run_case(case, torch_cmd, cudapool_cmd, timeout, out_dir, cases_file):
    name = case["name"]
    conf = case.get("conf") or ""
    fraction = case.get("fraction")
    trace = case["trace"]
    r = {
        "name": name,
        "trace": trace,
        "conf": conf,
        "fraction": fraction,
        "cudapool_conf": cudapool_conf(conf, fraction),
        "status": None,
        "diffs": [],
        "missing_required": [],
        "only_torch": [],
        "only_cudapool": [],
        "failed_allocs": {"torch": None, "cudapool": None},
        "torch": None,
        "cudapool": None,
        "notes": [],
    }
    # 1. PyTorch.
    cmd = torch_cmd + ["--cases", cases_file, name]
    rc, out, err, secs, timed_out = run_cmd(cmd, timeout)
    r["torch_seconds"] = round(secs, 1)
    tres = parse_json_output(out) if rc == 0 else None
    if tres is None or not isinstance(tres.get("stats"), dict) or "total_memory" not in tres:
        r["status"] = "torch_timeout" if timed_out else "torch_error"
        r["torch_rc"] = rc
        r["torch_stdout_tail"] = tail(out)
        r["torch_stderr_tail"] = tail(err)
        return r
    r["_segment_trace"] = tres.get("segment_trace")
    save_segment_trace(out_dir, name, tres)
    r["torch"] = tres
    r["torch_stderr_tail"] = tail(err)[-1500:]
    if tres.get("used_before_replay"):
        r["notes"].append("torch's allocator was used before the replay: %s"
                          % json.dumps(tres["used_before_replay"]))
    r["failed_allocs"]["torch"] = tres.get("failed_allocs")
    total = int(tres["total_memory"])
    mgi = tres.get("mem_get_info_total")
    if mgi is not None and int(mgi) != total:
        r["notes"].append("cudaMemGetInfo total %s != device properties total %s" % (mgi, total))

    # 2. cudapool, twice: with the segment addresses the driver gave PyTorch (the comparison that
    # decides), and with the simulated device's own addresses (policy only). Addresses matter
    # because best fit breaks ties between equal-size blocks by address.
    trace_path = resolve_trace(trace, cases_file)
    addressed_path = write_addressed_trace(out_dir, name, trace_path, r.get("_segment_trace"))
    r.pop("_segment_trace", None)
    runs = {}
    for label, path in (("addressed", addressed_path), ("fresh", trace_path)):
        if path is None:
            continue
        cmd = cudapool_cmd + ["replay", "--json", "--conf", r["cudapool_conf"],
                              "--device-memory", str(total), path]
        rc, out, err, secs, timed_out = run_cmd(cmd, timeout)
        runs[label] = (cmd, rc, out, err, secs, timed_out)
    label = "addressed" if "addressed" in runs else "fresh"
    cmd, rc, out, err, secs, timed_out = runs[label]
    r["addresses"] = "torch's" if label == "addressed" else "simulated"
    r["cudapool_cmd"] = " ".join(shlex.quote(x) for x in cmd)
    r["cudapool_seconds"] = round(secs, 1)
    cres = parse_json_output(out) if rc == 0 else None
    if cres is None or not isinstance(cres.get("stats"), dict):
        r["status"] = "cudapool_timeout" if timed_out else "cudapool_error"
        r["cudapool_rc"] = rc
        r["cudapool_stdout_tail"] = tail(out)
        r["cudapool_stderr_tail"] = tail(err)
        return r
    r["cudapool"] = cres
    r["cudapool_stderr_tail"] = tail(err)[-1500:]
    r["failed_allocs"]["cudapool"] = cres.get("failed_allocs")
    counts = cres.get("counts", {})
    r["segments_at_torch_address"] = "%s of %s%s" % (
        counts.get("segments_at_log_address"), counts.get("segment_alloc_events"),
        " (dropped)" if counts.get("log_addresses_dropped") else "")
    if "fresh" in runs and label == "addressed":
        f = runs["fresh"]
        fres = parse_json_output(f[2]) if f[1] == 0 else None
        if fres is not None and isinstance(fres.get("stats"), dict):
            fd, _, _ = compare(tres["stats"], fres["stats"])
            r["fresh_diffs"] = len(fd)
            r["fresh_failed_allocs"] = fres.get("failed_allocs")

    # 3. Compare.
    diffs, only_t, only_c = compare(tres["stats"], cres["stats"])
    r["diffs"] = [{"key": k, "torch": a, "cudapool": b} for k, a, b in diffs]
    r["only_torch"] = only_t
    r["only_cudapool"] = only_c
    r["missing_required"] = [k for k in REQUIRED_KEYS if k not in cres["stats"]]
    same_failed = r["failed_allocs"]["torch"] == r["failed_allocs"]["cudapool"]
    if not diffs and not r["missing_required"] and same_failed:
        r["status"] = "equal"
    else:
        r["status"] = "differ"
    if cres.get("unknown_frees"):
        r["notes"].append("cudapool counted %s unknown frees" % cres.get("unknown_frees"))
    return r


def print_case(r, i, n):
    head = "[%d/%d] %-32s %s" % (i, n, r["name"], r["status"])
    extra = []
    if r.get("torch_seconds") is not None:
        extra.append("torch %.1fs" % r["torch_seconds"])
    if r.get("cudapool_seconds") is not None:
        extra.append("cudapool %.1fs" % r["cudapool_seconds"])
    print(head + ("  (" + ", ".join(extra) + ")" if extra else ""), flush=True)
    if r["status"] == "differ":
        fa = r["failed_allocs"]
        if fa["torch"] != fa["cudapool"]:
            print("    failed_allocs: torch %s, cudapool %s" % (fa["torch"], fa["cudapool"]))
        for d in r["diffs"]:
            print("    %-40s torch %-16s cudapool %s" % (d["key"], d["torch"], d["cudapool"]))
        if r["missing_required"]:
            print("    missing from cudapool: %s" % ", ".join(r["missing_required"]))
    elif r["status"] not in ("equal", "skipped"):
        side = "torch" if r["status"].startswith("torch") else "cudapool"
        print("    %s rc=%s" % (side, r.get(side + "_rc")))
        for key in (side + "_stderr_tail", side + "_stdout_tail"):
            text = r.get(key) or ""
            if text.strip():
                for line in text.strip().splitlines()[-25:]:
                    print("    | " + line)
    if r.get("only_torch"):
        keys = r["only_torch"]
        print("    not compared (cudapool lacks %d torch keys): %s%s" % (
            len(keys), ", ".join(keys[:8]), ", ..." if len(keys) > 8 else ""))
    for note in r.get("notes", []):
        print("    note: " + note)
    sys.stdout.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--cases-file", default=os.path.join(HERE, "cases.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="output directory")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per command")
    ap.add_argument("--build-timeout", type=float, default=420.0,
                    help="seconds for building the torch extension")
    ap.add_argument("--budget-s", type=float, default=0.0,
                    help="stop starting cases after this many seconds (0: no limit); the rest "
                         "are reported as skipped")
    args = ap.parse_args(argv)
    t_start = time.time()

    args.cases_file = os.path.abspath(args.cases_file)
    with open(args.cases_file) as f:
        all_cases = json.load(f)["cases"]
    if args.cases:
        wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
        by_name = {c["name"]: c for c in all_cases}
        unknown = [w for w in wanted if w not in by_name]
        if unknown:
            print("run_parity: unknown cases: %s" % ", ".join(unknown), file=sys.stderr)
            return 2
        cases = [by_name[w] for w in wanted]
    else:
        cases = all_cases
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)

    torch_cmd = shlex.split(os.environ.get("TORCH_REPLAY_CMD", "")) or [
        sys.executable, os.path.join(HERE, "torch_replay.py")]
    cudapool_cmd = shlex.split(os.environ.get("CUDAPOOL", "")) or ["scripts/cudapool"]
    if not os.path.isabs(cudapool_cmd[0]) and os.sep in cudapool_cmd[0]:
        cudapool_cmd[0] = os.path.join(REPO, cudapool_cmd[0])
    print("run_parity: %d cases; torch: %s; cudapool: %s" % (
        len(cases), " ".join(torch_cmd), " ".join(cudapool_cmd)), flush=True)

    # Build the extension once, up front, so a build failure is reported once and clearly.
    rc, out, err, secs, timed_out = run_cmd(torch_cmd + ["--build-only"], args.build_timeout)
    build = parse_json_output(out) if rc == 0 else None
    if build is None:
        why = "torch_build_timeout" if timed_out else "torch_build_error"
        print("run_parity: building the torch replay extension failed (%s, rc=%s, %.0fs)"
              % (why, rc, secs))
        for line in (err or out).strip().splitlines()[-40:]:
            print("    | " + line)
        results = []
        for c in cases:
            results.append({"name": c["name"], "trace": c["trace"], "conf": c.get("conf") or "",
                            "fraction": c.get("fraction"), "status": why, "diffs": [],
                            "missing_required": [], "notes": [],
                            "failed_allocs": {"torch": None, "cudapool": None},
                            "torch_stderr_tail": tail(err), "torch_stdout_tail": tail(out)})
        print()
        print(write_outputs(out_dir, results, None, True), end="")
        print(summary_line(results))
        return 1
    print("run_parity: torch extension ready (%.0fs): %s" % (secs, json.dumps(build)), flush=True)

    results = []
    env_info = None
    for i, case in enumerate(cases, start=1):
        elapsed = time.time() - t_start
        if args.budget_s and elapsed > args.budget_s:
            r = {"name": case["name"], "trace": case["trace"], "conf": case.get("conf") or "",
                 "fraction": case.get("fraction"), "status": "skipped", "diffs": [],
                 "missing_required": [], "notes": ["time budget of %.0fs used" % args.budget_s],
                 "failed_allocs": {"torch": None, "cudapool": None}}
        else:
            timeout = args.timeout
            if args.budget_s:
                timeout = max(30.0, min(timeout, args.budget_s + 60.0 - elapsed))
            try:
                r = run_case(case, torch_cmd, cudapool_cmd, timeout, out_dir, args.cases_file)
            except Exception as e:  # a harness bug must not lose the other cases
                r = {"name": case["name"], "trace": case["trace"],
                     "conf": case.get("conf") or "", "fraction": case.get("fraction"),
                     "status": "harness_error", "diffs": [], "missing_required": [],
                     "notes": ["%s: %s" % (type(e).__name__, e)],
                     "failed_allocs": {"torch": None, "cudapool": None}}
        results.append(r)
        if env_info is None and r.get("torch"):
            t = r["torch"]
            env_info = {k: t.get(k) for k in ("device_name", "total_memory", "mem_get_info_total",
                                              "torch", "cuda")}
        print_case(r, i, len(cases))
        write_outputs(out_dir, results, env_info, False)

    table = write_outputs(out_dir, results, env_info, True)
    print()
    print(table, end="")
    print("run_parity: wrote %s and %s (%.0fs)" % (
        os.path.join(out_dir, "parity-table.md"), os.path.join(out_dir, "parity-results.json"),
        time.time() - t_start))
    print(summary_line(results))
    return 0 if all(r["status"] == "equal" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
