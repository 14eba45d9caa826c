#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/ddp_train.py: one rank of a deterministic DistributedDataParallel training, started by
torchrun (tests/gpu/ddp_ranks.sh runs it under the shim and under PyTorch's own cache).

Each rank trains the same MLP on its own shard of fixed data (batch sizes that vary, an odd-sized
temporary each step) and prints, one line each: `loss STEP HEX` (float.hex of the rank's loss),
`params HEX` (the sum of the parameters at the end, equal on every rank), `steps_per_s X` (the
timed steps after the first 10) and `peak_reserved BYTES` (torch.cuda.max_memory_reserved(): with
PYTORCH_NO_CUDA_MEMORY_CACHING=1 it is 0, and the shim's log has the figure). Backend nccl puts
rank r on GPU r (LOCAL_RANK); gloo puts every rank on GPU 0 (one GPU: NCCL refuses two ranks on
one device). Standard library and torch only; not a test by itself.
"""
import argparse
import os
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=("nccl", "gloo"), required=True)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out", required=True, help="folder: each rank writes rank-R.txt there")
    args = p.parse_args()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = int(os.environ["RANK"])
    out = open(os.path.join(args.out, "rank-%d.txt" % rank), "w")

    def say(line):
        out.write(line + "\n")
        out.flush()

    local = int(os.environ.get("LOCAL_RANK", rank))
    device_index = local if args.backend == "nccl" else 0
    torch.cuda.set_device(device_index)
    dev = torch.device("cuda", device_index)
    dist.init_process_group(args.backend)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    g = torch.Generator().manual_seed(1234 + rank)
    n, d_in, n_cls = 8192, 512, 32
    x_all = torch.randn(n, d_in, generator=g)
    w_true = torch.randn(d_in, n_cls, generator=torch.Generator().manual_seed(99))
    y_all = (x_all @ w_true + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(dim=1)
    x_all, y_all = x_all.to(dev), y_all.to(dev)
    model = torch.nn.Sequential(
        torch.nn.Linear(d_in, 2048), torch.nn.GELU(), torch.nn.LayerNorm(2048),
        torch.nn.Linear(2048, 2048), torch.nn.GELU(), torch.nn.Linear(2048, n_cls)).to(dev)
    ddp = DDP(model, device_ids=[device_index] if args.backend == "nccl" else None)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3, weight_decay=0.01)
    start = None
    for step in range(args.steps):
        if step == 10:
            torch.cuda.synchronize()
            start = time.perf_counter()
        batch = (256, 512, 1024, 768)[step % 4]
        lo = (step * 256) % (n - batch)
        xb, yb = x_all[lo:lo + batch], y_all[lo:lo + batch]
        tmp = torch.empty(batch * 1000 + 7 * step, device=dev)
        tmp.fill_(1.0)
        del tmp
        loss = F.cross_entropy(ddp(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        say("loss %d %s" % (step, loss.item().hex()))
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    total = sum(q.detach().double().sum().item() for q in model.parameters())
    say("params %s" % total.hex())
    say("steps_per_s %.3f" % ((args.steps - 10) / elapsed))
    say("peak_reserved %d" % torch.cuda.max_memory_reserved(dev))
    say("peak_allocated %d" % torch.cuda.max_memory_allocated(dev))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
