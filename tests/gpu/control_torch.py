#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/control_torch.py: the control endpoint (docs/control.md) on the GPU, with PyTorch.

A deterministic training loop (an MLP on fixed data, batch sizes that vary, a temporary of an odd
size each step) runs as a child process with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor goes
through cudaMalloc/cudaFree, so through the shim), LD_PRELOAD=<libcudapool.so>, CUDAPOOL_CONTROL=1
and a log. While it trains, this script asks it from outside, over and over, for `stats`,
`stats json` and `empty-cache`. Halfway, the child frees four 64 MiB tensors (idle segments of the
shim's pool), synchronizes and pauses; the script then reads nvidia-smi's used memory, asks
`empty-cache`, reads nvidia-smi again, and lets the child go on. Then the same loop runs again
under the shim without CUDAPOOL_CONTROL and without any question, and once more without the shim,
with PyTorch's own caching allocator. Checks, one PASS or FAIL line
each (exit status 1 on any FAIL):

  - losses: every step's loss (float.hex) and the final parameter sum equal those of the run
    without questions, and those of PyTorch's own cache, bit for bit;
  - questions: stats, stats json and empty-cache were answered during the run (counts);
  - empty-cache at the pause: nvidia-smi's used memory (the child's, from --query-compute-apps;
    the device's when the container hides per-process figures) fell by what empty-cache reported
    released, within 2 MiB per released segment (plus 2 MiB);
  - stats after it: reserved_bytes.all.current fell by the released bytes;
  - the log: one empty_cache event per pool of each empty-cache answer, each naming this script's
    pid (requested_by);
  - the socket is removed at the child's exit.

Usage (on the GPU machine, from the repository root, torch installed):
    python3 tests/gpu/control_torch.py --shim build/shim/libcudapool.so [--steps 300]
        [--device 0] [--python python3] [--keep DIR]
The child is this same file with --child. Standard library only in the parent (it never touches
CUDA itself); the client is scripts/cudapool_analysis/control.py.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MiB = 1 << 20
RESULTS = []


def result(ok, what):
    RESULTS.append(ok)
    print("%s %s" % ("PASS" if ok else "FAIL", what), flush=True)


# --- the child: the training loop ------------------------------------------------------------

def child(args):
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", 0)
    g = torch.Generator().manual_seed(1234)
    n, d_in, n_cls = 16384, 512, 32
    x_all = torch.randn(n, d_in, generator=g)
    w_true = torch.randn(d_in, n_cls, generator=g)
    y_all = (x_all @ w_true + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(dim=1)
    x_all, y_all = x_all.to(dev), y_all.to(dev)
    model = torch.nn.Sequential(
        torch.nn.Linear(d_in, 2048), torch.nn.GELU(), torch.nn.LayerNorm(2048),
        torch.nn.Linear(2048, 2048), torch.nn.GELU(), torch.nn.Linear(2048, n_cls)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    pause_at = args.steps // 2
    for step in range(args.steps):
        batch = (256, 512, 1024, 768)[step % 4]
        lo = (step * 256) % (n - batch)
        xb, yb = x_all[lo:lo + batch], y_all[lo:lo + batch]
        tmp = torch.empty(batch * 1000 + 7 * step, device=dev)
        tmp.fill_(1.0)
        del tmp
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print("loss %d %s" % (step, loss.item().hex()), flush=True)
        if step == pause_at:   # in both runs; only the queried one pauses
            big = [torch.empty(64 * MiB, dtype=torch.uint8, device=dev) for _ in range(4)]
            for t in big:
                t.fill_(1)
            del big, t
            torch.cuda.synchronize()
        if step == pause_at and args.pause_dir:
            open(os.path.join(args.pause_dir, "paused"), "w").close()
            while not os.path.exists(os.path.join(args.pause_dir, "resume")):
                time.sleep(0.01)
    total = sum(p.detach().double().sum().item() for p in model.parameters())
    print("params %s" % total.hex(), flush=True)
    return 0


# --- the parent ------------------------------------------------------------------------------

def smi_used_mib(pid, device):
    """(MiB used, 'process'|'device'): the child's from --query-compute-apps when listed, else
    the device's."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=20).stdout
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0] == str(pid):
                return float(parts[1]), "process"
        out = subprocess.run(["nvidia-smi", "-i", str(device), "--query-gpu=memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=20).stdout
        return float(out.split()[0]), "device"
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None, "none"


def settled_smi(pid, device, before=None):
    """nvidia-smi's figure once it stopped changing (it updates with some delay)."""
    last, kind = smi_used_mib(pid, device)
    for _ in range(20):
        time.sleep(0.15)
        now, kind = smi_used_mib(pid, device)
        if now == last and (before is None or now != before):
            break
        last = now
    return last, kind


def run_child(args, env, pause_dir=None):
    cmd = [args.python, os.path.abspath(__file__), "--child", "--steps", str(args.steps)]
    if pause_dir:
        cmd += ["--pause-dir", pause_dir]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def child_env(args, xdg, control, log=None):
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", XDG_RUNTIME_DIR=xdg,
               CUDA_VISIBLE_DEVICES=str(args.device),
               LD_PRELOAD=os.path.abspath(args.shim) + (
                   ":" + os.environ["LD_PRELOAD"] if os.environ.get("LD_PRELOAD") else ""))
    for k in ("CUDAPOOL_CONTROL", "CUDAPOOL_LOG", "CUDAPOOL_SUMMARY", "CUDAPOOL_DISABLE",
              "CUDAPOOL_METRICS", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        env.pop(k, None)
    if control:
        env["CUDAPOOL_CONTROL"] = "1"
    if log:
        env["CUDAPOOL_LOG"] = log
    return env


def lines_of(out, prefix):
    return [line for line in out.splitlines() if line.startswith(prefix)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shim", default=os.path.join(ROOT, "build", "shim", "libcudapool.so"))
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--keep", metavar="DIR", help="keep the log and outputs in DIR")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--pause-dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from cudapool_analysis import control

    work = args.keep or tempfile.mkdtemp(prefix="control-torch-")
    os.makedirs(work, exist_ok=True)
    xdg = os.path.join(work, "xdg")
    os.makedirs(xdg, mode=0o700, exist_ok=True)
    os.chmod(xdg, 0o700)
    pause = os.path.join(work, "pause")
    os.makedirs(pause, exist_ok=True)
    for name in ("paused", "resume"):
        if os.path.exists(os.path.join(pause, name)):
            os.unlink(os.path.join(pause, name))
    log = os.path.join(work, "queried.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    print("control_torch: shim %s, %d steps, device %d, work %s" % (args.shim, args.steps,
                                                                 args.device, work), flush=True)

    proc = run_child(args, child_env(args, xdg, True, log), pause)
    sock = os.path.join(xdg, "cudapool", "%d.sock" % proc.pid)
    counts = {"stats": 0, "stats json": 0, "empty-cache": 0}
    errors, stop = [], threading.Event()
    empties = []

    def ask_loop():
        kinds = ("stats", "stats json", "empty-cache")
        i = 0
        while not stop.is_set() and proc.poll() is None:
            if os.path.exists(os.path.join(pause, "paused")) and \
                    not os.path.exists(os.path.join(pause, "resume")):
                time.sleep(0.02)   # the measured empty-cache is the main thread's alone
                continue
            kind = kinds[i % 3]
            i += 1
            try:
                body = control.ask(str(proc.pid), kind, 30.0, os.path.join(xdg, "cudapool"))
                counts[kind] += 1
                if kind == "empty-cache":
                    empties.append(json.loads(body))
            except control.ControlError as e:
                if proc.poll() is None and os.path.exists(sock):
                    errors.append(str(e))
            time.sleep(0.05)

    deadline = time.monotonic() + 300
    while not os.path.exists(sock) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    asker = threading.Thread(target=ask_loop, daemon=True)
    asker.start()
    measured = None
    while proc.poll() is None and time.monotonic() < deadline:
        if os.path.exists(os.path.join(pause, "paused")):
            time.sleep(0.3)   # the asker stands aside
            before, kind = settled_smi(proc.pid, args.device)
            stats0 = json.loads(control.ask(str(proc.pid), "stats json", 30.0,
                                            os.path.join(xdg, "cudapool")))
            answer = json.loads(control.ask(str(proc.pid), "empty-cache", 30.0,
                                            os.path.join(xdg, "cudapool")))
            empties.append(answer)
            counts["empty-cache"] += 1
            after, kind2 = settled_smi(proc.pid, args.device, before)
            stats1 = json.loads(control.ask(str(proc.pid), "stats json", 30.0,
                                            os.path.join(xdg, "cudapool")))
            cli = subprocess.run([os.path.join(ROOT, "scripts", "cudapool"), "stats",
                                  str(proc.pid), "--dir", os.path.join(xdg, "cudapool")],
                                 capture_output=True, text=True)
            print(cli.stdout, flush=True)
            measured = (before, after, kind, kind2, answer, stats0, stats1)
            open(os.path.join(pause, "resume"), "w").close()
            break
        time.sleep(0.05)
    out, err = proc.communicate(timeout=max(10, deadline - time.monotonic()))
    stop.set()
    asker.join(timeout=30)
    with open(os.path.join(work, "queried.out"), "w") as f:
        f.write(out + err)
    if proc.returncode != 0:
        result(False, "the queried run: status %d: %s" % (proc.returncode, err[-1500:]))
        return 1

    ref = run_child(args, child_env(args, xdg, False))
    ref_out, ref_err = ref.communicate(timeout=900)
    with open(os.path.join(work, "reference.out"), "w") as f:
        f.write(ref_out + ref_err)
    # PyTorch's own caching allocator, no shim.
    own_env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(args.device))
    for k in ("PYTORCH_NO_CUDA_MEMORY_CACHING", "LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF",
              "PYTORCH_ALLOC_CONF"):
        own_env.pop(k, None)
    own = run_child(args, own_env)
    own_out, own_err = own.communicate(timeout=900)
    with open(os.path.join(work, "pytorch-cache.out"), "w") as f:
        f.write(own_out + own_err)
    c = lines_of(own_out, "loss ") + lines_of(own_out, "params ")
    result(own.returncode == 0 and c == lines_of(ref_out, "loss ") + lines_of(ref_out, "params "),
           "losses: bit-identical to PyTorch's own cache (no shim; %d lines, status %d)"
           % (len(c), own.returncode))
    a = lines_of(out, "loss ") + lines_of(out, "params ")
    b = lines_of(ref_out, "loss ") + lines_of(ref_out, "params ")
    result(ref.returncode == 0 and len(a) == args.steps + 1 and a == b,
           "losses: %d steps and the parameter sum bit-identical to the run without questions "
           "(%d lines, %d differ; reference status %d)"
           % (args.steps, len(a), sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b)),
              ref.returncode))
    result(all(counts[k] > 0 for k in counts) and not errors,
           "questions during the run: %s answered, %d failed%s" % (
               ", ".join("%s %d" % kv for kv in counts.items()), len(errors),
               (": " + errors[0]) if errors else ""))
    if measured is None:
        result(False, "the child never paused for the measured empty-cache")
    else:
        before, after, kind, kind2, answer, stats0, stats1 = measured
        released = sum(pl["released_bytes"] for pl in answer.get("pools", []))
        segments = sum(pl["released_segments"] for pl in answer.get("pools", []))
        tol = 2 * (segments + 1)
        drop = (before - after) if before is not None and after is not None else None
        fenced = sum(pl["fenced_bytes"] for pl in answer.get("pools", []))
        result(not answer.get("refused") and drop is not None and kind == kind2
               and released > 0 and abs(drop - released / MiB) <= tol,
               "empty-cache at the pause: released %.1f MiB in %d segments (the four 64 MiB "
               "tensors freed just before: 256 MiB; %.1f MiB kept behind reuse fences); "
               "nvidia-smi (%s) %.0f -> %.0f MiB, fell %.1f MiB (tolerance %d MiB)" % (
                   released / MiB, segments, fenced / MiB, kind, before or -1, after or -1,
                   drop if drop is not None else float("nan"), tol))
        r0 = stats0["devices"][0]["stats"]["reserved_bytes.all.current"]
        r1 = stats1["devices"][0]["stats"]["reserved_bytes.all.current"]
        result(r0 - r1 == released, "stats: reserved %d -> %d bytes, fell by %d; released %d"
               % (r0, r1, r0 - r1, released))
    events = []
    with open(log) as f:
        for line in f:
            e = json.loads(line)
            if e.get("action") == "empty_cache":
                events.append(e)
    mine = [e for e in events if e.get("requested_by") == os.getpid()]
    # One event per pool an answer lists: an answer before the program's first allocation (while
    # it imports torch) lists no pool and logs nothing.
    pools = sum(len(a.get("pools", [])) for a in empties)
    result(len(mine) == pools and len(empties) == counts["empty-cache"],
           "the log: %d empty_cache events name pid %d (requested_by), one per pool of the %d "
           "answers (%d listed no pool yet: before the first allocation)"
           % (len(mine), os.getpid(), len(empties),
              sum(1 for a in empties if not a.get("pools"))))
    result(not os.path.exists(sock), "the socket %s is removed at exit" % sock)
    print("control_torch: %s" % ("ok" if all(RESULTS) else "FAILED"), flush=True)
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
