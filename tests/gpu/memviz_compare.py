#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/memviz_compare.py: the memory_viz export against PyTorch's own snapshot, on the GPU.

    memviz_compare.py --shim build/shim/libcudapool.so [--out DIR] [--iters N] [--strict]
    memviz_compare.py --compare THEIRS.pickle OURS.pickle      (no GPU, no torch: the comparison)

Runs one small deterministic PyTorch workload (two convolutions and two linear layers, forward,
backward and SGD steps, tensors below and above 1 MiB made and freed each iteration) twice, each in
a fresh process:
  a. PyTorch's own caching allocator, with torch.cuda.memory._record_memory_history() from the
     start; torch.cuda.memory._snapshot() at the end, pickled (theirs.pickle);
  b. PYTORCH_NO_CUDA_MEMORY_CACHING=1 under the shim (LD_PRELOAD=--shim, CUDAPOOL_LOG), then
     `cudapool export --memory-viz` of its log (ours.pickle).
Both end with os._exit(0) right after the workload, so that neither holds the interpreter's
teardown. The workload marks its measured part with two allocations of sizes nothing else asks
for (MARK_START, MARK_END): the part between them is free of library start-up allocations (cuBLAS,
cuDNN handles) that only the shim sees.

Prints a markdown table: the segments and blocks at the end, the trace's actions, over the whole
run and within the marked part; then runs PyTorch's torch/cuda/_memory_viz.py `stats` and `trace`
on both pickles, and tests/cli/check_viewers.py on ours. Rules (a failure exits 1): our pickle
loads with plain pickle and `stats` and `trace` read it; check_viewers passes; within the marked
part the requests (alloc sizes) and the frees (free_requested) are the same; every block PyTorch
holds at the end (active_allocated, by size) is one of ours. The other rows are compared, and
differences shown: the shim sees allocations PyTorch does not make through its allocator, and
completes a fenced free later than PyTorch does (docs/shim.md, reuse fences). --strict makes
every row a rule.

Not here: the export (scripts/cudapool_analysis/memviz.py), the viewer's rules
(tests/cli/check_viewers.py).
"""
import argparse
import collections
import io
import os
import pickle
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MARK_START = 777_777      # bytes: the first and last allocations of the measured part
MARK_END = 888_889
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom")


# ---- the workload (in a child process, with torch) ------------------------------------------------

def workload(mode, out, iters):
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        print("memviz_compare: torch.cuda.is_available() is False", file=sys.stderr)
        os._exit(3)
    if mode == "torch":
        torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True)
    dev = torch.device("cuda", 0)
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(16, 3, 32, 32, generator=g).to(dev)
    y = torch.randint(0, 10, (16,), generator=g).to(dev)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(32 * 32 * 32, 128), torch.nn.ReLU(),      # a 16 MiB weight
        torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    step()                      # warm-up: handles, workspaces, momentum buffers
    torch.cuda.synchronize()
    mark = torch.empty(MARK_START, dtype=torch.uint8, device=dev)
    del mark
    kept = []
    for i in range(iters):
        loss = step()
        small = torch.empty(100_000 + 4096 * i, dtype=torch.uint8, device=dev)    # < 1 MiB
        big = torch.empty((3 << 20) + 65536 * i, dtype=torch.uint8, device=dev)   # > 1 MiB
        small.fill_(1)
        big.fill_(2)
        del small
        kept.append(big)
        if len(kept) > 2:
            del kept[0]
        del loss
    mark = torch.empty(MARK_END, dtype=torch.uint8, device=dev)
    del mark
    torch.cuda.synchronize()
    if mode == "torch":
        with open(out, "wb") as f:
            pickle.dump(torch.cuda.memory._snapshot(), f)
    sys.stdout.flush()
    os._exit(0)                 # no teardown: the state at the end of the workload


# ---- reading and comparing snapshots (no torch) --------------------------------------------------

class PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("the pickle names a class: %s.%s" % (module, name))


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    return PlainUnpickler(io.BytesIO(data)).load(), data


def section(trace):
    """The entries from the MARK_START alloc to the MARK_END alloc (None without both)."""
    starts = [i for i, e in enumerate(trace) if e["action"] == "alloc" and e["size"] == MARK_START]
    ends = [i for i, e in enumerate(trace) if e["action"] == "alloc" and e["size"] == MARK_END]
    if not starts or not ends or ends[-1] < starts[0]:
        return None
    return trace[starts[0]:ends[-1] + 1]


def summary(snap, dev=0):
    segs = [s for s in snap["segments"] if s["device"] == dev]
    blocks = [b for s in segs for b in s["blocks"]]
    traces = snap["device_traces"]
    trace = traces[dev] if dev < len(traces) else []
    part = section(trace)
    return {
        "segments": len(segs),
        "segment sizes": collections.Counter((s["segment_type"], s["total_size"]) for s in segs),
        "reserved": sum(s["total_size"] for s in segs),
        "blocks": collections.Counter((b["state"], b["size"]) for b in blocks
                                      if b["state"] != "inactive"),
        "allocated blocks": collections.Counter(b["size"] for b in blocks
                                                if b["state"] == "active_allocated"),
        "actions": collections.Counter(e["action"] for e in trace),
        "part": part,
        "part actions": collections.Counter(e["action"] for e in part) if part else None,
        "part requests": collections.Counter(e["size"] for e in part if e["action"] == "alloc")
        if part else None,
    }


def short(counter, limit=6):
    if counter is None:
        return "(no marks)"
    items = sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))
    text = ", ".join("%s x%d" % (k if not isinstance(k, tuple) else "/".join(map(str, k)), n)
                     for k, n in items[:limit])
    return text + (", ..." if len(items) > limit else "") if items else "-"


def compare(theirs, ours, strict=False):
    """Rows (what, PyTorch's, ours, verdict, rule): rule rows must agree (or contain)."""
    t, o = summary(theirs), summary(ours)
    rows = []

    def row(what, a, b, same, rule):
        rows.append((what, a, b, "same" if same else "differs", rule or strict))

    row("segments at the end", t["segments"], o["segments"], t["segments"] == o["segments"],
        False)
    row("segment sizes (type/bytes)", short(t["segment sizes"]), short(o["segment sizes"]),
        t["segment sizes"] == o["segment sizes"], False)
    row("reserved at the end", t["reserved"], o["reserved"], t["reserved"] == o["reserved"],
        False)
    row("blocks (state/bytes)", short(t["blocks"]), short(o["blocks"]), t["blocks"] == o["blocks"],
        False)
    missing = t["allocated blocks"] - o["allocated blocks"]
    rows.append(("PyTorch's allocated blocks among ours", sum(t["allocated blocks"].values()),
                 sum(o["allocated blocks"].values()),
                 "contained" if not missing else "missing: " + short(missing), True))
    for act in ACTIONS:
        a, b = t["actions"][act], o["actions"][act]
        if a or b:
            row("trace: %s" % act, a, b, a == b, False)
    if t["part"] is None or o["part"] is None:
        rows.append(("marked part", "found" if t["part"] is not None else "no marks",
                     "found" if o["part"] is not None else "no marks", "skipped", False))
    else:
        row("marked part: requests (alloc sizes)", short(t["part requests"]),
            short(o["part requests"]), t["part requests"] == o["part requests"], True)
        for act in ACTIONS:
            a, b = t["part actions"][act], o["part actions"][act]
            if a or b:
                row("marked part: %s" % act, a, b, a == b, act in ("alloc", "free_requested"))
    return rows


def markdown(rows):
    out = ["| what | PyTorch | cudapool | verdict | rule |", "| --- | --- | --- | --- | --- |"]
    for what, a, b, verdict, rule in rows:
        out.append("| %s | %s | %s | %s | %s |" % (what, a, b, verdict, "yes" if rule else ""))
    return "\n".join(out)


def broken(rows):
    return [r for r in rows if r[4] and r[3] not in ("same", "contained", "skipped")]


def pickle_rules(data):
    """Rule rows for our pickle: protocol 2 to 4 (the viewer's reader)."""
    proto = data[1] if data[:1] == b"\x80" else None
    ok = proto is not None and 2 <= proto <= 4
    return [("our pickle: protocol", "-", proto, "same" if ok else "not 2 to 4", True)]


# ---- the GPU run -----------------------------------------------------------------------------------

def run(cmd, env, what, timeout=600):
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout)
    text = done.stdout.decode("utf-8", "replace")
    return done.returncode, text


def memviz_tool_rows(path, label):
    """PyTorch's torch/cuda/_memory_viz.py `stats` and `trace` on a pickle."""
    rows = []
    for cmd in ("stats", "trace"):
        rc, text = run([sys.executable, "-m", "torch.cuda._memory_viz", cmd, path], os.environ,
                       cmd)
        lines = text.strip().splitlines()
        rows.append(("_memory_viz %s on %s" % (cmd, label), "", "exit %d, %d lines" % (
            rc, len(lines)), "same" if rc == 0 else "fails: " + (lines[-1] if lines else ""),
            True))
        if rc != 0:
            print(text[-2000:], file=sys.stderr)
    return rows


def gpu_main(args):
    out = args.out or tempfile.mkdtemp(prefix="memviz-compare-")
    os.makedirs(out, exist_ok=True)
    theirs, log, ours = (os.path.join(out, n) for n in ("theirs.pickle", "shim.jsonl",
                                                          "ours.pickle"))
    for p in (theirs, log, ours):
        if os.path.exists(p):
            os.unlink(p)
    me = os.path.abspath(__file__)
    base = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8")
    base.pop("PYTORCH_NO_CUDA_MEMORY_CACHING", None)
    base.pop("LD_PRELOAD", None)
    rc, text = run([sys.executable, me, "--workload", "torch", theirs, "--iters", str(args.iters)],
                   base, "torch")
    if rc != 0 or not os.path.exists(theirs):
        print("memviz_compare: PyTorch's run failed (exit %d):\n%s" % (rc, text[-3000:]))
        return 2
    env = dict(base, PYTORCH_NO_CUDA_MEMORY_CACHING="1", CUDAPOOL_LOG=log, CUDAPOOL_BACKTRACE="4",
               LD_PRELOAD=os.path.abspath(args.shim))
    rc, text = run([sys.executable, me, "--workload", "shim", "-", "--iters", str(args.iters)],
                   env, "shim")
    if rc != 0 or not os.path.exists(log):
        print("memviz_compare: the run under the shim failed (exit %d, log %s):\n%s"
              % (rc, "written" if os.path.exists(log) else "missing", text[-3000:]))
        return 2
    pkg = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "scripts"))
    rc, text = run([sys.executable, "-m", "cudapool_analysis", "export", "--memory-viz", ours,
                    log], pkg, "export")
    print(text.strip())
    if rc != 0:
        print("memviz_compare: the export failed (exit %d)" % rc)
        return 1
    report = os.path.join(out, "report.json")
    rc, text = run([sys.executable, "-m", "cudapool_analysis", "report", "--json", log], pkg,
                   "report")
    with open(report, "w") as f:
        f.write(text)
    t, _ = load(theirs)
    o, data = load(ours)
    rows = pickle_rules(data) + compare(t, o, args.strict)
    rows += memviz_tool_rows(theirs, "PyTorch's") + memviz_tool_rows(ours, "ours")
    rc, text = run([sys.executable, os.path.join(ROOT, "tests", "cli", "check_viewers.py"),
                    "memviz", ours, report], pkg, "check")
    rows.append(("check_viewers.py on ours", "", text.strip().splitlines()[-1] if text.strip()
                 else "", "same" if rc == 0 else "fails", True))
    if rc != 0:
        print(text[-3000:], file=sys.stderr)
    print("\nmemviz_compare (files in %s):\n" % out)
    print(markdown(rows))
    bad = broken(rows)
    print("\nmemviz_compare: %s" % ("ok" if not bad else "%d rule(s) broken: %s" % (
        len(bad), "; ".join(r[0] for r in bad))))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shim", help="libcudapool.so")
    p.add_argument("--out", help="a directory for the files (default: a new temporary one)")
    p.add_argument("--iters", type=int, default=4)
    p.add_argument("--strict", action="store_true", help="every row a rule")
    p.add_argument("--compare", nargs=2, metavar=("THEIRS", "OURS"))
    p.add_argument("--workload", nargs=2, metavar=("MODE", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.workload:
        workload(args.workload[0], args.workload[1], args.iters)
        return 0
    if args.compare:
        (t, _), (o, data) = load(args.compare[0]), load(args.compare[1])
        rows = pickle_rules(data) + compare(t, o, args.strict)
        print(markdown(rows))
        bad = broken(rows)
        print("\nmemviz_compare: %s" % ("ok" if not bad else "%d rule(s) broken" % len(bad)))
        return 1 if bad else 0
    if not args.shim:
        p.error("--shim PATH (libcudapool.so) is needed, or --compare A B")
    return gpu_main(args)


if __name__ == "__main__":
    sys.exit(main())
