#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/variable_inputs.py: an inference loop whose inputs need very different amounts of device
memory (issue 31), run with whatever allocator the environment gives it: PyTorch's own cache
(optionally with torch.cuda.empty_cache() after every image), or the cache off under the shim
(PYTORCH_NO_CUDA_MEMORY_CACHING=1, LD_PRELOAD=libcudapool.so). A cache keeps what the largest input
needed; this measures what that costs in memory held and what giving it back costs in speed.
bench/idle_release.sh runs it side by side in one call. A benchmark for a GPU machine, never a
test; not a model-quality measure (random weights, random pixels).

The model: transformers' SamModel built from SamConfig() (a ViT-B image encoder on 1024x1024,
random weights, nothing downloaded), in eval under torch.inference_mode(), float32 with TF32
matrix products. Each image (random pixels, a random size: longest side 800-1600) is resized and
padded on the device as SamProcessor does, prompted with N points, one mask request per point
(point_batch N, 3 masks each, multimask_output=True), and its masks post-processed as SamProcessor's
post_process_masks does (upscaled to 1024, cropped, upscaled to the image's own size, thresholded);
the area of each point's best mask goes back to the host (one synchronization per image).
Memory grows with N, mostly in the mask decoder (the 256x64x64 image embedding repeated per point)
and in the masks at full size (N x 3 x H x W floats):
  light   4-16 points (interactive clicks)               about 1-3 GB in use (estimated)
  medium  48-160 points                                  about 5-12 GB
  heavy   a 32x32 grid, 1024 points ("segment everything" in one batch)
                                                         about 20-40 GB, by the image's size
The estimates come from the shapes, not from a run: --probe measures them. The sequence is drawn
once from --seed: --images images, of which a share --heavy-share are heavy and --medium-share
medium (positions, sizes, points and pixels all seeded), repeated --rounds times; one light image
(not in the sequence) runs first as a warm-up, outside the measured loop.

  variable_inputs.py [--mode defaults|empty_cache] [--images 48] [--rounds 2] [--seed 31]
                     [--heavy-grid 32] [--probe] [--idle-tail-s 1.0] [--device cuda:0]

Prints one line, RESULT {json}:
  images, images_per_s    the measured loop (after the warm-up image), between two device
                          synchronizations; seconds_by_kind: its wall time per kind of image
  nvml_base               device used memory (NVML, all processes) before CUDA started here
  nvml_start              the same after the model was loaded and the warm-up image ran
  nvml_peak, nvml_mean    read every 5 ms by a thread during the measured loop (mean: time
                          weighted); raw used bytes, the base not subtracted
  nvml_end, nvml_idle     right after the loop, and after --idle-tail-s more seconds of doing
                          nothing (what a cache that gives idle memory back has given back)
  max_memory_reserved, max_memory_allocated   PyTorch's own statistics (0 with its cache off:
                          then the shim's log has the pool's)
  checksum                a SHA-256 over every best-mask area, in order (random weights make the
                          masks near-degenerate; equal checksums still mean equal results)
The number of cudaMalloc calls is not visible from Python: the shim's log has it.
--probe runs one image of each kind twice instead (after the warm-up) and prints PROBE lines:
seconds of the second run, PyTorch's peak allocated for it (cache on only) and NVML's peak.
--device cpu runs the loop's logic on the CPU (a dry run: no NVML, no memory figures).
"""
import argparse
import hashlib
import json
import os
import random
import sys
import time

SAM_SIZE = 1024
PIXEL_MEAN = (123.675, 116.28, 103.53)
PIXEL_STD = (58.395, 57.12, 57.375)


def parse_range(text):
    lo, _, hi = text.partition(":")
    lo, hi = int(lo), int(hi or lo)
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError("want LO:HI with 1 <= LO <= HI, got " + text)
    return lo, hi


def make_sequence(args):
    """The images of one round, drawn once from args.seed: dicts of kind, h, w, points, seed."""
    rng = random.Random(args.seed)
    n = args.images
    n_heavy = round(n * args.heavy_share)
    n_medium = round(n * args.medium_share)
    if args.heavy_share > 0 and n >= 2:
        n_heavy = max(1, n_heavy)
    n_heavy = min(n_heavy, n)
    n_medium = min(n_medium, n - n_heavy)
    order = list(range(n))
    rng.shuffle(order)
    kind_at = {}
    for i in order[:n_heavy]:
        kind_at[i] = "heavy"
    for i in order[n_heavy:n_heavy + n_medium]:
        kind_at[i] = "medium"
    seq = [draw_image(rng, kind_at.get(i, "light"), args) for i in range(n)]
    warmup = draw_image(random.Random(args.seed + 1), "light", args)
    return seq, warmup


def draw_image(rng, kind, args):
    longest = rng.randint(*args.sizes)
    a, b = rng.choice([(4, 3), (3, 4), (16, 9), (9, 16), (1, 1)])
    if a >= b:
        w, h = longest, max(1, longest * b // a)
    else:
        h, w = longest, max(1, longest * a // b)
    if kind == "heavy":
        points = args.heavy_grid * args.heavy_grid
    elif kind == "medium":
        points = rng.randint(*args.medium_points)
    else:
        points = rng.randint(*args.light_points)
    return {"kind": kind, "h": h, "w": w, "points": points, "seed": rng.randrange(1 << 30)}


def build_model(torch, device):
    import transformers
    transformers.logging.set_verbosity_error()
    config = transformers.SamConfig()
    model = transformers.SamModel(config)
    return model.to(device).eval()


def make_runner(torch, model, device, args):
    import torch.nn.functional as F
    on_cuda = device.type == "cuda"
    mean = torch.tensor(PIXEL_MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(PIXEL_STD, device=device).view(1, 3, 1, 1)

    def run(item):
        """One request: returns the best-mask area of every point (a host list of ints)."""
        h, w, n = item["h"], item["w"], item["points"]
        gen = torch.Generator(device=device)
        gen.manual_seed(item["seed"])
        image = torch.randint(0, 256, (3, h, w), dtype=torch.uint8, device=device, generator=gen)
        # SamProcessor's preprocessing: longest side to 1024, normalized, padded to 1024x1024.
        scale = SAM_SIZE / max(h, w)
        nh, nw = int(h * scale + 0.5), int(w * scale + 0.5)
        x = F.interpolate(image[None].float(), size=(nh, nw), mode="bilinear", align_corners=False)
        x = (x - mean) / std
        x = F.pad(x, (0, SAM_SIZE - nw, 0, SAM_SIZE - nh))
        if item["kind"] == "heavy":
            g = args.heavy_grid
            ys = (torch.arange(g, device=device, dtype=torch.float32) + 0.5) * (nh / g)
            xs = (torch.arange(g, device=device, dtype=torch.float32) + 0.5) * (nw / g)
            yy, xx = torch.meshgrid(ys, xs, indexing="ij")
            points = torch.stack([xx.reshape(-1), yy.reshape(-1)], dim=-1)
        else:
            points = torch.rand(n, 2, device=device, generator=gen)
            points = points * torch.tensor([nw, nh], device=device, dtype=torch.float32)
        input_points = points.view(1, n, 1, 2)
        input_labels = torch.ones(1, n, 1, dtype=torch.long, device=device)
        with torch.inference_mode():
            out = model(pixel_values=x, input_points=input_points, input_labels=input_labels,
                        multimask_output=True)
            # SamProcessor's post_process_masks, on the device: (N, 3, 256, 256) logits to
            # 1024x1024, cropped to the resized image, to the image's own size, thresholded.
            masks = out.pred_masks[0]
            masks = F.interpolate(masks, size=(SAM_SIZE, SAM_SIZE), mode="bilinear",
                                  align_corners=False)
            masks = masks[..., :nh, :nw]
            masks = F.interpolate(masks, size=(h, w), mode="bilinear", align_corners=False)
            masks = masks > 0.0
            areas = masks.sum(dim=(-1, -2))
            best = out.iou_scores[0].argmax(dim=-1, keepdim=True)
            kept = areas.gather(1, best)[:, 0]
        result = kept.tolist()
        del out, masks, areas, best, kept, x, image, points, input_points, input_labels
        if on_cuda and args.mode == "empty_cache":
            torch.cuda.empty_cache()
        return result

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["defaults", "empty_cache"], default="defaults",
                    help="empty_cache: torch.cuda.empty_cache() after every image")
    ap.add_argument("--images", type=int, default=48, help="images in the sequence (48)")
    ap.add_argument("--rounds", type=int, default=2, help="times the sequence runs (2)")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--heavy-share", type=float, default=0.125, help="share of heavy images (1/8)")
    ap.add_argument("--medium-share", type=float, default=0.125, help="share of medium (1/8)")
    ap.add_argument("--heavy-grid", type=int, default=32, help="heavy: a GxG grid of points (32)")
    ap.add_argument("--light-points", type=parse_range, default=(4, 16), metavar="LO:HI")
    ap.add_argument("--medium-points", type=parse_range, default=(48, 160), metavar="LO:HI")
    ap.add_argument("--sizes", type=parse_range, default=(800, 1600), metavar="LO:HI",
                    help="the longest side of an image, in pixels (800:1600)")
    ap.add_argument("--idle-tail-s", type=float, default=1.0,
                    help="seconds of idleness after the loop before nvml_idle is read (1.0)")
    ap.add_argument("--sample-ms", type=float, default=5.0, help="NVML reading period (5)")
    ap.add_argument("--probe", action="store_true",
                    help="one image of each kind, twice: seconds and peak memory per kind")
    ap.add_argument("--device", default="cuda:0", help="cuda:0; cpu for a dry run of the logic")
    ap.add_argument("--print-sequence", action="store_true",
                    help="print the sequence (SEQ lines) and exit; needs no torch")
    args = ap.parse_args()
    if args.images < 1 or args.rounds < 1:
        ap.error("--images and --rounds must be at least 1")

    seq, warmup = make_sequence(args)
    if args.print_sequence:
        for i, item in enumerate(seq):
            print("SEQ %d %s" % (i, json.dumps(item)))
        print("SEQ warmup %s" % json.dumps(warmup))
        return 0

    on_cuda = args.device.startswith("cuda")
    sampler = None
    nvml_base = 0
    if on_cuda:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from nvml_sampler import Sampler
        sampler = Sampler(period_s=args.sample_ms / 1000.0)
        nvml_base = sampler.used()          # before this process has a CUDA context

    import torch
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = torch.device(args.device)
    model = build_model(torch, device)
    run = make_runner(torch, model, device, args)

    def sync():
        if on_cuda:
            torch.cuda.synchronize(device)

    run(warmup)
    sync()

    if args.probe:
        for kind in ("light", "medium", "heavy"):
            item = next((it for it in seq if it["kind"] == kind), None)
            if item is None:
                continue
            run(item)
            sync()
            if on_cuda:
                torch.cuda.reset_peak_memory_stats(device)
                sampler.start()
            t0 = time.perf_counter()
            run(item)
            sync()
            seconds = time.perf_counter() - t0
            s = sampler.stop() if on_cuda else {"peak": 0}
            print("PROBE " + json.dumps({
                "kind": kind, "points": item["points"], "h": item["h"], "w": item["w"],
                "seconds": round(seconds, 4),
                "max_memory_allocated": torch.cuda.max_memory_allocated(device) if on_cuda else 0,
                "nvml_peak": s["peak"], "nvml_base": nvml_base}), flush=True)
        return 0

    nvml_start = sampler.used() if on_cuda else 0
    digest = hashlib.sha256()
    by_kind = {}
    count = 0
    if on_cuda:
        sampler.start()
    t0 = time.perf_counter()
    for _ in range(args.rounds):
        for item in seq:
            t = time.perf_counter()
            areas = run(item)
            by_kind[item["kind"]] = by_kind.get(item["kind"], 0.0) + time.perf_counter() - t
            digest.update(json.dumps(areas).encode())
            count += 1
    sync()
    seconds = time.perf_counter() - t0
    s = sampler.stop() if on_cuda else {"peak": 0, "mean": 0, "samples": 0}
    nvml_end = sampler.used() if on_cuda else 0
    time.sleep(max(0.0, args.idle_tail_s))
    nvml_idle = sampler.used() if on_cuda else 0
    kinds = {}
    for item in seq:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + args.rounds
    result = {
        "script": "variable_inputs", "mode": args.mode, "images": count,
        "rounds": args.rounds, "kinds": kinds, "heavy_points": args.heavy_grid ** 2,
        "images_per_s": count / seconds, "seconds": seconds,
        "seconds_by_kind": {k: round(v, 4) for k, v in sorted(by_kind.items())},
        "nvml_base": nvml_base, "nvml_start": nvml_start, "nvml_peak": s["peak"],
        "nvml_mean": s["mean"], "nvml_end": nvml_end, "nvml_idle": nvml_idle,
        "idle_tail_s": args.idle_tail_s, "nvml_samples": s["samples"],
        "max_memory_reserved": torch.cuda.max_memory_reserved(device) if on_cuda else 0,
        "max_memory_allocated": torch.cuda.max_memory_allocated(device) if on_cuda else 0,
        "caching_off": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1",
        "preloaded": "libcudapool" in os.environ.get("LD_PRELOAD", ""),
        "checksum": digest.hexdigest()[:16],
        "torch": torch.__version__,
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
