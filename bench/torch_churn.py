#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/torch_churn.py: PyTorch throughput and device memory with the allocator the environment
gives it. bench/run_gpu_bench.sh runs it in a fresh process per mode: PyTorch's own cache;
PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor a cudaMalloc/cudaFree); the same under the shim.

  torch_churn.py --mode LABEL --part churn|train [--churn-iters N] [--churn-seconds S]
                 [--train-steps N] [--train-seconds S]

Each part runs in its own process (so that memory one part leaves cached does not hide the
other's use).

1. Tensor churn: N iterations (default 100000) of torch.empty of a size drawn from 256 B .. 16 MiB
   into one of 8 slots (the tensor it replaces is freed); stops early after --churn-seconds.
2. Training: a small transformer-style MLP (pre-norm residual blocks, width 1024, 8192 tokens per
   step, AdamW) for N steps (default 200), or fewer after --train-seconds.
Device memory in use is sampled at the points of peak use (slots full; after forward, after
backward, after the optimizer step) in two ways: NVML (the device's used memory; sees everything
held from the driver, also a pool's cached blocks) and torch.cuda.mem_get_info (total - free;
what cudaMemGetInfo reports, which a pool may report with its cached blocks as free); both minus
the value at start. torch.cuda.max_memory_reserved() is PyTorch's own figure (0 with its cache off).

Prints one line: RESULT mode=LABEL part=PART iters=N per_s=R peak_nvml_mib=M peak_meminfo_mib=M
torch_max_reserved_mib=M torch_max_allocated_mib=M (per_s: iterations or steps per second).
"""
import argparse
import ctypes
import os
import random
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
from shim_probe import shim_loaded  # noqa: E402


class Nvml:
    """The device's used memory from NVML through ctypes; used() is None when NVML is missing."""

    class _Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                    ("used", ctypes.c_ulonglong)]

    def __init__(self, torch):
        self.lib = None
        self.handle = ctypes.c_void_p()
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
            props = torch.cuda.get_device_properties(0)
            ok = False
            if all(hasattr(props, a) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
                bus = "%08x:%02x:%02x.0" % (props.pci_domain_id, props.pci_bus_id,
                                             props.pci_device_id)
                ok = lib.nvmlDeviceGetHandleByPciBusId_v2(bus.encode(),
                                                          ctypes.byref(self.handle)) == 0
            if not ok:
                count = ctypes.c_uint(0)
                if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0 or count.value != 1:
                    return
                if lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)) != 0:
                    return
            self.lib = lib
        except (OSError, AttributeError):
            self.lib = None

    def used(self):
        if self.lib is None:
            return None
        m = self._Mem()
        if self.lib.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(m)) != 0:
            return None
        return int(m.used)


class Peak:
    def __init__(self, torch, nvml):
        self.torch, self.nvml = torch, nvml
        self.base_nvml = nvml.used()
        free, total = torch.cuda.mem_get_info(0)
        self.base_info = total - free
        self.peak_nvml = 0
        self.peak_info = 0

    def sample(self):
        u = self.nvml.used()
        if u is not None and self.base_nvml is not None:
            self.peak_nvml = max(self.peak_nvml, u - self.base_nvml)
        free, total = self.torch.cuda.mem_get_info(0)
        self.peak_info = max(self.peak_info, (total - free) - self.base_info)


def churn(torch, iters, seconds, peak):
    sizes = [256, 4096, 65536, 1 << 20, 4 << 20, 16 << 20]
    rng = random.Random(0)
    slots_i = [rng.randrange(8) for _ in range(iters)]
    sizes_i = [sizes[rng.randrange(len(sizes))] // 4 for _ in range(iters)]
    slots = [None] * 8
    dev = torch.device("cuda", 0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    done = 0
    for i in range(iters):
        slots[slots_i[i]] = torch.empty(sizes_i[i], dtype=torch.float32, device=dev)
        done += 1
        if (i & 1023) == 1023:
            peak.sample()
            if time.perf_counter() - t0 > seconds:
                break
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    peak.sample()
    slots.clear()
    return done, dt


def train(torch, steps, seconds, peak):
    nn = torch.nn
    width, tokens = 1024, 8192

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.up = nn.Linear(width, 4 * width)
            self.down = nn.Linear(4 * width, width)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))

    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    model = nn.Sequential(nn.Linear(256, width), *[Block() for _ in range(4)],
                          nn.LayerNorm(width), nn.Linear(width, 256)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(tokens, 256, device=dev)
    y = torch.randn(tokens, 256, device=dev)
    warm = 5
    t0 = None
    done = 0
    for step in range(steps + warm):
        if step == warm:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        out = model(x)
        loss = torch.nn.functional.mse_loss(out, y)
        peak.sample()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        peak.sample()
        opt.step()
        peak.sample()
        if step >= warm:
            done += 1
            if time.perf_counter() - t0 > seconds:
                break
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return done, dt, float(loss.item())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", required=True, help="a label for the RESULT line")
    ap.add_argument("--part", choices=("churn", "train"), required=True)
    ap.add_argument("--churn-iters", type=int, default=100000)
    ap.add_argument("--churn-seconds", type=float, default=20.0)
    ap.add_argument("--train-steps", type=int, default=200)
    ap.add_argument("--train-seconds", type=float, default=40.0)
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("torch_churn: torch.cuda.is_available() is False")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.cuda.init()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    nvml = Nvml(torch)
    have_nvml = nvml.used() is not None
    print("torch_churn: mode %s, part %s, torch %s, PYTORCH_NO_CUDA_MEMORY_CACHING=%s, shim %s, "
          "NVML %s" % (args.mode, args.part, torch.__version__,
                       os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "(unset)"),
                       "loaded" if shim_loaded() else "not-loaded", "yes" if have_nvml else "no"))
    sys.stdout.flush()

    mib = 1024.0 * 1024.0
    peak = Peak(torch, nvml)
    fields = {"mode": args.mode, "part": args.part,
              "shim": "loaded" if shim_loaded() else "not-loaded"}
    if args.part == "churn":
        done, dt = churn(torch, args.churn_iters, args.churn_seconds, peak)
        print("torch_churn: churn %d iterations in %.2f s (%.0f it/s)" % (done, dt, done / dt))
        fields.update(iters=done, per_s="%.0f" % (done / dt))
    else:
        done, dt, last_loss = train(torch, args.train_steps, args.train_seconds, peak)
        print("torch_churn: train %d steps in %.2f s (%.2f steps/s), last loss %.4f"
              % (done, dt, done / dt, last_loss))
        fields.update(iters=done, per_s="%.2f" % (done / dt))
    fields.update(
        peak_nvml_mib=("%.0f" % (peak.peak_nvml / mib)) if have_nvml else "na",
        peak_meminfo_mib="%.0f" % (peak.peak_info / mib),
        torch_max_reserved_mib="%.0f" % (torch.cuda.max_memory_reserved() / mib),
        torch_max_allocated_mib="%.0f" % (torch.cuda.max_memory_allocated() / mib),
    )
    print("RESULT " + " ".join("%s=%s" % kv for kv in fields.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
