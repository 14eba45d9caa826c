# SPDX-License-Identifier: Apache-2.0
"""bench/python_stacks.py: what CUDAPOOL_BACKTRACE=python costs on a real PyTorch model, beside
PyTorch's own recorder, and whether both name the same lines of the user's code at the peak. GPU
machine only (torch with CUDA); no test of CI.

    python3 bench/python_stacks.py --shim build/shim/libcudapool.so --out DIR [--steps N] [--rounds R]

A small transformer defined in this file (so that its lines are "the user's code") trains on
inputs of varying sequence length. Each mode runs in a process of its own, the modes interleaved
R rounds:
  shim          the shim, PyTorch's cache off, a log without stacks
  shim+python   the same with CUDAPOOL_BACKTRACE=python
  torch         PyTorch's own cache
  torch+record  PyTorch's cache with torch.cuda.memory._record_memory_history(stacks="python")
Each prints steps/s (after 5 warm-up steps) and, for the two that record, DIR has the log or the
snapshot. Then both are read the same way: the events replayed, the blocks alive at the peak of
allocated bytes grouped by their innermost frame in this file, and the top sites compared. A
micro-benchmark gives the cost per allocation (torch.empty + del of 1 KiB..1 MiB through the shim
with and without Python stacks, cache off). Prints one JSON object per result line and a summary.
Not here: the page (cudapool report --html reads the log afterwards).
"""
import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)


def model_main(mode, steps, out):
    import torch
    import torch.nn as nn

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            b, t, d = x.shape
            qkv = self.qkv(x).view(b, t, 3, self.heads, d // self.heads)  # SITE qkv
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)  # SITE scores
            att = att.softmax(dim=-1)  # SITE softmax
            y = (att @ v).transpose(1, 2).reshape(b, t, d)  # SITE values
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.att = Attention(d, heads)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.att(self.ln1(x))  # SITE attention block
            return x + self.mlp(self.ln2(x))  # SITE mlp block

    class Net(nn.Module):
        def __init__(self, vocab=8192, d=512, heads=8, layers=6):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.head = nn.Linear(d, vocab)

        def forward(self, ids):
            x = self.emb(ids)  # SITE embedding
            for blk in self.blocks:
                x = blk(x)
            return self.head(x)  # SITE logits

    torch.manual_seed(0)
    dev = torch.device("cuda")
    if mode == "torch+record":
        torch.cuda.memory._record_memory_history(stacks="python", max_entries=2_000_000)
    net = Net().to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    lengths = [64, 512, 128, 256, 1024, 96, 384, 768, 192, 640]
    times = []
    for step in range(steps):
        t = lengths[step % len(lengths)]
        ids = torch.randint(0, 8192, (16, t), device=dev)
        torch.cuda.synchronize()
        start = time.perf_counter()
        logits = net(ids)
        loss = nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if mode == "torch+record":
        snap = torch.cuda.memory._snapshot()
        with open(os.path.join(out, "torch_snapshot.pickle"), "wb") as f:
            pickle.dump(snap, f)
        torch.cuda.memory._record_memory_history(enabled=None)
    warm = times[5:]
    print(json.dumps({"mode": mode, "steps": len(warm), "steps_per_s": len(warm) / sum(warm),
                      "max_reserved": torch.cuda.max_memory_reserved()}), flush=True)


def micro_main(count):
    import torch
    dev = torch.device("cuda")
    torch.empty(1, device=dev)
    sizes = [1 << 10, 1 << 14, 1 << 17, 1 << 20]
    start = time.perf_counter()
    for i in range(count):
        x = torch.empty(sizes[i & 3], dtype=torch.uint8, device=dev)
        del x
    elapsed = time.perf_counter() - start
    print(json.dumps({"micro_ns_per_pair": elapsed / count * 1e9}), flush=True)


def user_frame(frames, key_file, key_line):
    """The innermost frame of this file as "file:line", or None (no Python stack: PyTorch's
    autograd engine runs backward on threads of its own, which run no Python code)."""
    for f in frames:
        if os.path.basename(f[key_file]) == os.path.basename(HERE):
            return "%s:%d" % (os.path.basename(f[key_file]), f[key_line])
    return None


def peak_sites(events):
    """events: (kind 'a'|'f', addr, size, site) in order. The sites of the blocks alive at the
    peak of live bytes, largest first: [(site, bytes)]."""
    live, total, best, best_live = {}, 0, -1, {}
    for kind, addr, size, site in events:
        if kind == "a":
            live[addr] = (size, site)
            total += size
        elif addr in live:
            total -= live.pop(addr)[0]
        if total > best:
            best, best_live = total, dict(live)
    sites = {}
    for size, site in best_live.values():
        sites[site] = sites.get(site, 0) + size
    return best, sorted(sites.items(), key=lambda kv: -kv[1])


def log_events(path):
    frames, stacks, events = {}, {}, []
    for text in open(path, encoding="utf-8"):
        line = json.loads(text)
        a = line.get("action")
        if a == "python_frame":
            frames[line["id"]] = line
        elif a == "python_stack":
            stacks[line["id"]] = [frames[f] for f in line["frames"]]
        elif a == "alloc":
            st = stacks.get(line.get("python_stack"), [])
            events.append(("a", line["ptr"], line["block_size"],
                           user_frame(st, "file", "line")))
        elif a == "free_requested":
            events.append(("f", line["ptr"], 0, None))
    return events


def snapshot_events(path):
    snap = pickle.load(open(path, "rb"))
    events = []
    for trace in snap["device_traces"]:
        for e in trace:
            if e["action"] == "alloc":
                events.append(("a", e["addr"], e["size"],
                               user_frame(e.get("frames", []), "filename", "line")))
            elif e["action"] == "free_requested":
                events.append(("f", e["addr"], 0, None))
    return events


def run(mode, args, env_extra, micro=False):
    env = dict(os.environ)
    env.update(env_extra)
    cmd = [sys.executable, HERE, "--child", mode, "--steps", str(args.steps), "--out", args.out]
    if micro:
        cmd = [sys.executable, HERE, "--micro-child", str(args.micro)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        print(json.dumps({"mode": mode, "failed": out.returncode, "stderr": out.stderr[-2000:]}))
        return None
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["mode"] = mode
    print(json.dumps(result), flush=True)
    return result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shim")
    p.add_argument("--out", default="/tmp/python_stacks")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--micro", type=int, default=200000)
    p.add_argument("--child")
    p.add_argument("--micro-child", type=int)
    a = p.parse_args()
    if a.child:
        return model_main(a.child, a.steps, a.out)
    if a.micro_child:
        return micro_main(a.micro_child)
    os.makedirs(a.out, exist_ok=True)
    shim = {"LD_PRELOAD": os.path.abspath(a.shim), "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    modes = {
        "shim": dict(shim, CUDAPOOL_LOG=os.path.join(a.out, "plain-%p.jsonl")),
        "shim+python": dict(shim, CUDAPOOL_LOG=os.path.join(a.out, "python-%p.jsonl"),
                            CUDAPOOL_BACKTRACE="python"),
        "torch": {},
        "torch+record": {},
    }
    results = {m: [] for m in modes}
    for r in range(a.rounds):
        for m, env in modes.items():
            res = run(m, a, env)
            if res:
                results[m].append(res["steps_per_s"])
    micro = {}
    for r in range(a.rounds):
        for m in ("shim", "shim+python"):
            env = dict(modes[m])
            env["CUDAPOOL_LOG"] = os.path.join(a.out, "micro-%s-%%p.jsonl" % m.replace("+", "_"))
            res = run(m + " micro", a, env, micro=True)
            if res:
                micro.setdefault(m, []).append(res["micro_ns_per_pair"])
    summary = {m: {"steps_per_s_median": statistics.median(v), "runs": v} for m, v in results.items() if v}
    for m, v in micro.items():
        summary[m]["micro_ns_per_pair_median"] = statistics.median(v)
    logs = sorted(f for f in os.listdir(a.out) if f.startswith("python-"))
    if logs and os.path.exists(os.path.join(a.out, "torch_snapshot.pickle")):
        ours_peak, ours = peak_sites(log_events(os.path.join(a.out, logs[-1])))
        theirs_peak, theirs = peak_sites(snapshot_events(os.path.join(a.out, "torch_snapshot.pickle")))
        summary["sites"] = {"shim_peak_bytes": ours_peak, "shim_top": ours[:8],
                            "torch_peak_bytes": theirs_peak, "torch_top": theirs[:8],
                            "top5_same_set": {s for s, _ in ours[:5]} == {s for s, _ in theirs[:5]}}
    for m in ("shim+python", "torch+record"):
        base = "shim" if m == "shim+python" else "torch"
        if m in summary and base in summary:
            summary[m]["ratio_to_" + base] = (summary[m]["steps_per_s_median"] /
                                             summary[base]["steps_per_s_median"])
    text = json.dumps({"summary": summary}, indent=1, default=str)
    print(text)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
