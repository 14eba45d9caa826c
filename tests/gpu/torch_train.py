#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/torch_train.py: a small deterministic MLP training loop (50 steps) on the GPU.

Prints one line per step, `loss STEP HEX` (float.hex() of the loss), and a final `params HEX`
(float.hex() of the sum of every parameter in float64), so that two runs can be compared bit for
bit: run.sh runs it with PYTORCH_NO_CUDA_MEMORY_CACHING=1 with and without the shim (every tensor
then goes through cudaMalloc/cudaFree) and compares the lines. Also prints `shim loaded|not-loaded`
and a last line `torch_train: ok` (exit 0) unless something failed.
"""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def main():
    import torch

    if not torch.cuda.is_available():
        print("torch_train: torch.cuda.is_available() is False")
        return 1
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    print("torch_train: torch %s, device %s, PYTORCH_NO_CUDA_MEMORY_CACHING=%s, shim %s"
          % (torch.__version__, torch.cuda.get_device_name(0),
             os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "(unset)"),
             "loaded" if shim_loaded() else "not-loaded"))
    dev = torch.device("cuda", 0)

    # Data on the CPU from a fixed generator, then moved: identical in every run.
    g = torch.Generator().manual_seed(1234)
    n, d_in, n_cls = 8192, 256, 16
    x_all = torch.randn(n, d_in, generator=g)
    w_true = torch.randn(d_in, n_cls, generator=g)
    y_all = (x_all @ w_true + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(dim=1)
    x_all, y_all = x_all.to(dev), y_all.to(dev)

    model = torch.nn.Sequential(
        torch.nn.Linear(d_in, 1024), torch.nn.GELU(),
        torch.nn.LayerNorm(1024),
        torch.nn.Linear(1024, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, n_cls),
    ).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    batch = 512
    losses = []
    for step in range(50):
        lo = (step * batch) % n
        xb, yb = x_all[lo:lo + batch], y_all[lo:lo + batch]
        # An extra temporary of an odd size each step, so the allocator sees some churn.
        tmp = torch.empty(batch * 3 + 7 * step, device=dev)
        tmp.fill_(1.0)
        del tmp
        logits = model(xb)
        loss = torch.nn.functional.cross_entropy(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        v = float(loss.item())
        losses.append(v)
        print("loss %d %s" % (step, v.hex()))
    with torch.no_grad():
        total = sum(p.detach().double().sum() for p in model.parameters())
    print("params %s" % float(total.item()).hex())
    torch.cuda.synchronize()
    ok = all(v == v for v in losses) and losses[-1] < losses[0]
    print("torch_train: first loss %.6f, last loss %.6f, reserved by torch %d bytes"
          % (losses[0], losses[-1], torch.cuda.memory_reserved()))
    print("torch_train: %s" % ("ok" if ok else "FAILED (loss did not fall or is NaN)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
