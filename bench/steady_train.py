#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/steady_train.py: a fixed-shape training loop, the case where a cache that gives idle
memory back must cost nothing (issue 31): every step needs the same blocks as the last, so
nothing should sit idle long enough to be released. Run with whatever allocator the environment
gives it (PyTorch's own cache, or the cache off under the shim); bench/idle_release.sh runs it
beside bench/variable_inputs.py. A benchmark for a GPU machine, never a test; not a model-quality
measure (random weights, random data).

The loop: torchvision ResNet-50 (weights=None), batch --batch (64) of 3x224x224 random images
drawn on the device each step, cross-entropy, SGD with momentum 0.9, float32 (cuDNN's defaults,
TF32 convolutions). --warmup steps (10) run first, unmeasured; then --steps (60) measured ones.

  steady_train.py [--steps 60] [--warmup 10] [--batch 64] [--seed 31] [--idle-tail-s 1.0]
                  [--device cuda:0]

Prints one line, RESULT {json}: steps, steps_per_s (the measured steps, between two device
synchronizations), nvml_base (device used memory through NVML before CUDA started here),
nvml_start (after the warm-up), nvml_peak and nvml_mean (read every 5 ms by a thread during the
measured steps; raw used bytes, the base not subtracted), nvml_end and nvml_idle (right after, and
after --idle-tail-s seconds of idleness), max_memory_reserved / max_memory_allocated (PyTorch's;
0 with its cache off), loss (the last step's). --device cpu runs the logic only (a dry run).
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=60, help="measured steps (60)")
    ap.add_argument("--warmup", type=int, default=10, help="unmeasured steps first (10)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--idle-tail-s", type=float, default=1.0)
    ap.add_argument("--sample-ms", type=float, default=5.0)
    ap.add_argument("--device", default="cuda:0", help="cuda:0; cpu for a dry run of the logic")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch < 1:
        ap.error("--steps and --batch must be at least 1, --warmup at least 0")

    on_cuda = args.device.startswith("cuda")
    sampler = None
    nvml_base = 0
    if on_cuda:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from nvml_sampler import Sampler
        sampler = Sampler(period_s=args.sample_ms / 1000.0)
        nvml_base = sampler.used()

    import torch
    import torchvision
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = torchvision.models.resnet50(weights=None).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)

    def step():
        x = torch.randn(args.batch, 3, 224, 224, device=device, generator=gen)
        y = torch.randint(0, 1000, (args.batch,), device=device, generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    def sync():
        if on_cuda:
            torch.cuda.synchronize(device)

    for _ in range(args.warmup):
        step()
    sync()
    nvml_start = sampler.used() if on_cuda else 0
    if on_cuda:
        sampler.start()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    sync()
    seconds = time.perf_counter() - t0
    s = sampler.stop() if on_cuda else {"peak": 0, "mean": 0, "samples": 0}
    nvml_end = sampler.used() if on_cuda else 0
    time.sleep(max(0.0, args.idle_tail_s))
    nvml_idle = sampler.used() if on_cuda else 0
    result = {
        "script": "steady_train", "steps": args.steps, "warmup": args.warmup,
        "batch": args.batch, "steps_per_s": args.steps / seconds, "seconds": seconds,
        "nvml_base": nvml_base, "nvml_start": nvml_start, "nvml_peak": s["peak"],
        "nvml_mean": s["mean"], "nvml_end": nvml_end, "nvml_idle": nvml_idle,
        "idle_tail_s": args.idle_tail_s, "nvml_samples": s["samples"],
        "max_memory_reserved": torch.cuda.max_memory_reserved(device) if on_cuda else 0,
        "max_memory_allocated": torch.cuda.max_memory_allocated(device) if on_cuda else 0,
        "caching_off": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1",
        "preloaded": "libcudapool" in os.environ.get("LD_PRELOAD", ""),
        "loss": float(loss),
        "torch": torch.__version__,
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
