#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/ddp_ranks.py: a torchrun job under the shim, every rank, read back as one job (issue 20).

Runs tests/gpu/ddp_train.py with `torchrun --standalone --nproc_per_node N`, alternately with
PyTorch's own caching allocator and with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1) under
the shim (LD_PRELOAD, CUDAPOOL_LOG=OUT/shim-K/run-%r.jsonl), ROUNDS times each. NVLink multicast
stays off in every process (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1: the GPU machines' rule). Backend nccl with one GPU per rank when the
machine has N GPUs, else gloo with every rank on GPU 0 (NCCL refuses two ranks on one device).
One PASS or FAIL line per check, exit status 1 on any FAIL:

  - every run exits 0; under the shim exactly one log per rank (run-0 ... run-N-1: none for the
    torchrun launcher itself), every line valid and the replay equal to its summary
    (tests/log_check.py);
  - per rank: losses of every step and the final parameter sum bit-identical to PyTorch's cache;
  - per rank: steps/s (best of the rounds) under the shim against PyTorch's (printed; the check is
    that it is within 2%, or faster);
  - per rank: peak reserved under the shim (the log's summary line) no higher than PyTorch's own
    (torch.cuda.max_memory_reserved());
  - what reached the pool: per log, the pooled allocations (alloc events) and the VMM calls passed
    through (NCCL's cuMemCreate/cuMemMap buffers: vmm_* events), printed;
  - the logs as one job: `cudapool report` (text and --json: one section per rank, a rank table),
    `cudapool tune` (decided over both logs), `cudapool export --perfetto` (one process per rank on
    one clock).

Usage (GPU machine, repository root): python3 tests/gpu/ddp_ranks.py --shim build-gpu/shim/libcudapool.so
    --build build-gpu --out DIR [--nproc 2] [--steps 200] [--rounds 2] [--backend nccl|gloo]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = []
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


def result(ok, what):
    RESULTS.append(ok)
    print("%s %s" % ("PASS" if ok else "FAIL", what), flush=True)


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
        return sum(1 for line in out.splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.TimeoutExpired):
        return 0


def base_env():
    env = dict(os.environ, **NO_MULTICAST)
    for k in list(env):
        if k.startswith("CUDAPOOL_") or k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
                                               "PYTORCH_NO_CUDA_MEMORY_CACHING", "LD_PRELOAD"):
            env.pop(k)
    return env


def torchrun(args, out, env):
    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node", str(args.nproc), os.path.join(HERE, "ddp_train.py"),
           "--backend", args.backend, "--steps", str(args.steps), "--out", out]
    start = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    with open(os.path.join(out, "torchrun.txt"), "w") as f:
        f.write(r.stdout + r.stderr)
    ranks = []
    for rank in range(args.nproc):
        path = os.path.join(out, "rank-%d.txt" % rank)
        lines = open(path).read().splitlines() if os.path.exists(path) else []
        ranks.append(lines)
    return r.returncode, ranks, time.monotonic() - start, (r.stderr or r.stdout)[-1500:]


def field(lines, name):
    for line in lines:
        if line.startswith(name + " "):
            return line.split()[1]
    return None


def numbers(lines):
    return [line for line in lines if line.startswith("loss ") or line.startswith("params ")]


def read_log(path):
    events, header, summary = {}, None, None
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if "schema" in e and "action" not in e:
                header = e
            elif e.get("action") == "summary":
                summary = e
            elif "action" in e:
                events[e["action"]] = events.get(e["action"], 0) + 1
    return header, summary, events


def cli(args, command, *argv):
    """`cudapool COMMAND ARGV...` as the launcher runs it, with the carried build's tools (tune is
    the C++ tool itself; report and export the Python package)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "scripts"))
    env.pop("LD_PRELOAD", None)
    if command == "tune":
        cmd = [os.path.join(args.build, "tools", "cudapool-tune")]
    else:
        cmd = [sys.executable, "-m", "cudapool_analysis", command]
    return subprocess.run(cmd + list(argv), env=env, capture_output=True, text=True, timeout=300)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shim", required=True)
    p.add_argument("--build", required=True, help="the build folder with tools/cudapool-*")
    p.add_argument("--out", required=True)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--backend", choices=("nccl", "gloo"))
    args = p.parse_args()
    gpus = gpu_count()
    if args.backend is None:
        args.backend = "nccl" if gpus >= args.nproc else "gloo"
    print("ddp_ranks: %d GPU(s), %d ranks, backend %s, %d steps, %d rounds" % (
        gpus, args.nproc, args.backend, args.steps, args.rounds), flush=True)
    os.makedirs(args.out, exist_ok=True)

    own_runs, shim_runs = [], []
    for k in range(args.rounds):
        own_runs.append(torchrun(args, os.path.join(args.out, "own-%d" % k), base_env()))
        env = base_env()
        logs = os.path.join(args.out, "shim-%d" % k)
        env.update(PYTORCH_NO_CUDA_MEMORY_CACHING="1", LD_PRELOAD=os.path.abspath(args.shim),
                   CUDAPOOL_LOG=os.path.join(logs, "run-%r.jsonl"))
        shim_runs.append(torchrun(args, logs, env))
    for name, runs in (("PyTorch's cache", own_runs), ("the shim", shim_runs)):
        bad = [(k, rc, tail) for k, (rc, _, _, tail) in enumerate(runs) if rc != 0]
        result(not bad, "%s: %d torchrun jobs exit 0 (%s s)%s" % (
            name, len(runs), ", ".join("%.0f" % r[2] for r in runs),
            (": round %d status %d: %s" % bad[0]) if bad else ""))
    if any(r[0] != 0 for r in own_runs + shim_runs):
        return 1

    logs = os.path.join(args.out, "shim-0")
    files = sorted(glob.glob(os.path.join(logs, "run-*.jsonl*")))
    want = [os.path.join(logs, "run-%d.jsonl" % r) for r in range(args.nproc)]
    result(files == want, "one log per rank: %s" % [os.path.basename(f) for f in files])
    checked = []
    for rank, path in enumerate(want):
        if not os.path.exists(path):
            continue
        c = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "log_check.py"), "--replay",
                            os.path.join(args.build, "tools", "cudapool-replay"), path],
                           capture_output=True, text=True, timeout=300)
        header, summary, events = read_log(path)
        checked.append((rank, header, summary, events))
        result(c.returncode == 0 and header is not None,
               "rank %d: log_check and replay: %s" % (
                   rank, (c.stdout.strip().splitlines() or ["?"])[-1][:300]))

    for rank in range(args.nproc):
        a = numbers(own_runs[0][1][rank])
        b = [numbers(r[1][rank]) for r in shim_runs]
        c = [numbers(r[1][rank]) for r in own_runs[1:]]
        result(len(a) == args.steps + 1 and all(x == a for x in b + c),
               "rank %d: %d losses and the parameter sum bit-identical to PyTorch's cache in "
               "every round" % (rank, len(a)))
        own = max(float(field(r[1][rank], "steps_per_s") or 0) for r in own_runs)
        shim = max(float(field(r[1][rank], "steps_per_s") or 0) for r in shim_runs)
        result(own > 0 and shim >= 0.98 * own,
               "rank %d: steps/s, best of %d: shim %.2f, PyTorch %.2f (%+.1f%%)" % (
                   rank, args.rounds, shim, own, 100 * (shim / own - 1) if own else 0))
        own_peak = int(field(own_runs[0][1][rank], "peak_reserved") or 0)
        entry = [c for c in checked if c[0] == rank]
        shim_peak = None
        if entry and entry[0][2]:
            devs = entry[0][2].get("devices", {})
            shim_peak = sum(d["stats"]["reserved_bytes.all.peak"] for d in devs.values())
        own_alloc = int(field(own_runs[0][1][rank], "peak_allocated") or 0)
        shim_alloc = None
        if entry and entry[0][2]:
            shim_alloc = sum(d["stats"]["allocated_bytes.all.peak"]
                             for d in entry[0][2].get("devices", {}).values())
        result(shim_peak is not None and own_peak > 0 and shim_peak <= own_peak,
               "rank %d: peak reserved: shim %s MiB, PyTorch %.1f MiB (peak allocated: shim %s "
               "MiB, PyTorch %.1f MiB)" % (
                   rank, "%.1f" % (shim_peak / 2**20) if shim_peak is not None else "?",
                   own_peak / 2**20,
                   "%.1f" % (shim_alloc / 2**20) if shim_alloc is not None else "?",
                   own_alloc / 2**20))
    for rank, header, summary, events in checked:
        vmm = {k: v for k, v in events.items() if k.startswith("vmm_")}
        print("INFO rank %d: pooled allocations %d (alloc events), passed through: %s; all "
              "actions: %s" % (rank, events.get("alloc", 0), vmm or "no VMM call",
                               dict(sorted(events.items()))), flush=True)

    r = cli(args, "report", *want)
    r_json = cli(args, "report", "--json", *want)
    ranks_seen = None
    try:
        doc = json.loads(r_json.stdout)
        ranks_seen = len(doc.get("logs", []))
        print("INFO report --json ranks: %s" % [(x.get("rank"), x.get("rank_from"), x.get("pid"))
                                               for x in doc.get("ranks", [])], flush=True)
    except ValueError:
        pass
    with open(os.path.join(args.out, "report.txt"), "w") as f:
        f.write(r.stdout + r.stderr)
    result(r.returncode == 0 and r_json.returncode == 0 and ranks_seen == args.nproc,
           "cudapool report of the %d logs: status %d/%d, %s sections in --json" % (
               args.nproc, r.returncode, r_json.returncode, ranks_seen))
    t = cli(args, "tune", *want)
    with open(os.path.join(args.out, "tune.txt"), "w") as f:
        f.write(t.stdout + t.stderr)
    result(t.returncode == 0 and t.stdout.strip() != "",
           "cudapool tune of the %d logs: status %d, %d lines" % (
               args.nproc, t.returncode, len(t.stdout.splitlines())))
    trace = os.path.join(args.out, "job.perfetto.json")
    e = cli(args, "export", "--perfetto", trace, *want)
    pids = set()
    if e.returncode == 0 and os.path.exists(trace):
        data = json.load(open(trace))
        items = data["traceEvents"] if isinstance(data, dict) else data
        pids = {x.get("pid") for x in items if x.get("ph") not in ("M",)}
    result(e.returncode == 0 and len(pids) == args.nproc,
           "cudapool export --perfetto: status %d, %d processes (one per rank)%s" % (
               e.returncode, len(pids), (": " + e.stderr[-300:]) if e.returncode else ""))
    print("ddp_ranks: %s" % ("ok" if all(RESULTS) else "FAILED"), flush=True)
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
