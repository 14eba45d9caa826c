#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/torch_models.py: one real PyTorch model, trained or run for inference, in this process,
with whatever allocator the environment gives it (PyTorch's own cache, or the cache off under the
shim). bench/run_torch_models.sh runs it once per (model, task, mode) in a fresh process.

  torch_models.py --model resnet50|fasterrcnn|gpt2|gpt2var --task train|infer
                  [--steps N] [--warmup N] [--seed S] [--profile]

Models (random weights; nothing is downloaded):
- resnet50: torchvision ResNet-50, batch 64 of 224x224, SGD (momentum 0.9); inference batch 64.
- fasterrcnn: torchvision Faster R-CNN (ResNet-50 FPN), 2 images per call, each of a random size
  (height and width drawn from 320..1024, so the resized inputs vary); training with 1-4 random
  boxes per image.
- gpt2: a 12-layer GPT-2 (transformers), batch 8 of 512 tokens, AdamW; inference the same shapes.
- gpt2var: the same model, batch size 1-16 and sequence length 32-1024 drawn each step.
The random draws come from a generator seeded by --seed, so every mode sees the same shapes and
data; cuDNN runs deterministic algorithms. Everything is computed in float32.

Prints one line, RESULT {json}: steps, steps_per_s (measured steps, after --warmup unmeasured
ones, between two device synchronizations), checksum (a SHA-256 of every loss or output value, in
order: equal checksums mean bit-identical results), torch_peak_reserved / torch_peak_allocated /
torch_device_allocs (PyTorch's own statistics; 0 with its cache off, where the shim's summary
gives the pool's).

--profile runs the steps under torch.profiler instead and prints, per CUDA stream, the kernels and
copies it ran and the most frequent names, and the counts of the stream and event calls of the
CUDA runtime: which work goes to which stream.
"""
import argparse
import hashlib
import json
import os
import random
import sys
import time


def build(model_name, task, torch, device):
    if model_name == "resnet50":
        import torchvision
        model = torchvision.models.resnet50(weights=None).to(device)
    elif model_name == "fasterrcnn":
        import torchvision
        model = torchvision.models.detection.fasterrcnn_resnet50_fpn(
            weights=None, weights_backbone=None, num_classes=91).to(device)
    elif model_name in ("gpt2", "gpt2var"):
        import transformers
        transformers.logging.set_verbosity_error()
        config = transformers.GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=1024,
                                         attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0)
        config._attn_implementation = "eager"
        model = transformers.GPT2LMHeadModel(config).to(device)
    else:
        raise SystemExit("unknown model " + model_name)
    if task == "train":
        model.train()
        if model_name.startswith("gpt2"):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        model.eval()
        opt = None
    return model, opt


def make_step(model_name, task, model, opt, torch, device, rng):
    """A function running one step; returns the tensors whose values the checksum covers."""
    gen = torch.Generator(device="cpu")

    def resnet_batch():
        gen.manual_seed(rng.randrange(1 << 30))
        x = torch.randn(64, 3, 224, 224, generator=gen).to(device)
        y = torch.randint(0, 1000, (64,), generator=gen).to(device)
        return x, y

    def detection_batch():
        gen.manual_seed(rng.randrange(1 << 30))
        images, targets = [], []
        for _ in range(2):
            h, w = rng.randint(320, 1024), rng.randint(320, 1024)
            images.append(torch.rand(3, h, w, generator=gen).to(device))
            n = rng.randint(1, 4)
            boxes = []
            for _ in range(n):
                x0, y0 = rng.uniform(0, w * 0.6), rng.uniform(0, h * 0.6)
                boxes.append([x0, y0, x0 + rng.uniform(16, w * 0.4), y0 + rng.uniform(16, h * 0.4)])
            targets.append({"boxes": torch.tensor(boxes, dtype=torch.float32).to(device),
                            "labels": torch.randint(1, 91, (n,), generator=gen).to(device)})
        return images, targets

    def gpt_batch():
        gen.manual_seed(rng.randrange(1 << 30))
        if model_name == "gpt2var":
            b, t = rng.randint(1, 16), rng.randint(32, 1024)
        else:
            b, t = 8, 512
        return torch.randint(0, 50257, (b, t), generator=gen).to(device)

    if model_name == "resnet50":
        loss_fn = torch.nn.CrossEntropyLoss()
        if task == "train":
            def step():
                x, y = resnet_batch()
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                return [loss.detach()]
        else:
            def step():
                x, _ = resnet_batch()
                with torch.no_grad():
                    return [model(x)]
    elif model_name == "fasterrcnn":
        if task == "train":
            def step():
                images, targets = detection_batch()
                opt.zero_grad(set_to_none=True)
                losses = model(images, targets)
                loss = sum(losses[k] for k in sorted(losses))
                loss.backward()
                opt.step()
                return [loss.detach()]
        else:
            def step():
                images, _ = detection_batch()
                with torch.no_grad():
                    out = model(images)
                return [t for d in out for k in sorted(d) for t in [d[k]]]
    else:
        if task == "train":
            def step():
                ids = gpt_batch()
                opt.zero_grad(set_to_none=True)
                loss = model(input_ids=ids, labels=ids).loss
                loss.backward()
                opt.step()
                return [loss.detach()]
        else:
            def step():
                ids = gpt_batch()
                with torch.no_grad():
                    return [model(input_ids=ids).logits[:, -1, :]]
    return step


def profile(step, torch, steps):
    import tempfile
    from torch.profiler import ProfilerActivity, profile as torch_profile
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    os.unlink(path)
    streams = {}
    calls = {}
    for e in trace.get("traceEvents", []):
        cat = e.get("cat", "")
        name = e.get("name", "")
        args = e.get("args", {}) or {}
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            s = streams.setdefault(args.get("stream", -1), {})
            s[name] = s.get(name, 0) + 1
        elif cat in ("cuda_runtime", "cuda_driver"):
            calls[name] = calls.get(name, 0) + 1
    for sid in sorted(streams, key=lambda k: -sum(streams[k].values())):
        names = streams[sid]
        top = sorted(names.items(), key=lambda kv: -kv[1])[:5]
        print("PROFILE stream=%s work=%d top=%s" % (sid, sum(names.values()),
                                                   json.dumps([[n[:80], c] for n, c in top])))
    print("PROFILE calls=%s" % json.dumps(calls, sort_keys=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--task", default="train", choices=["train", "infer"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    import torch
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda:0")
    rng = random.Random(args.seed)
    model, opt = build(args.model, args.task, torch, device)
    step = make_step(args.model, args.task, model, opt, torch, device, rng)
    if args.profile:
        for _ in range(args.warmup):
            step()
        profile(step, torch, args.steps)
        return 0

    digest = hashlib.sha256()

    def absorb(tensors):
        for t in tensors:
            digest.update(t.detach().float().cpu().numpy().tobytes())

    for _ in range(args.warmup):
        absorb(step())
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    kept = []
    for _ in range(args.steps):
        kept.append(step())
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    for tensors in kept:
        absorb(tensors)
    stats = torch.cuda.memory_stats()
    result = {
        "model": args.model, "task": args.task, "steps": args.steps,
        "steps_per_s": args.steps / seconds, "checksum": digest.hexdigest()[:16],
        "torch_peak_reserved": stats.get("reserved_bytes.all.peak", 0),
        "torch_peak_allocated": stats.get("allocated_bytes.all.peak", 0),
        "torch_device_allocs": stats.get("num_device_alloc", 0),
        "caching_off": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1",
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
