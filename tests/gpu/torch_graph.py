#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/torch_graph.py: torch.cuda.graph capture and replay of a small model.

Captures the forward pass of a small MLP (warm-up on a side stream first, as PyTorch's docs do),
replays it 10 times with new inputs copied into the static input, and compares each output with
the eager forward pass (max abs difference <= 1e-5 relative to the output scale). Whether
PyTorch's caching allocator is on is up to the environment (run.sh runs it both ways):
PYTORCH_NO_CUDA_MEMORY_CACHING=1 makes PyTorch call cudaMalloc during capture, which the CUDA
runtime refuses in global capture mode, so PyTorch may raise there.

Exit status: 0 captured, replayed, correct; 3 the capture was refused with an exception and CUDA
still works afterwards (the exception is printed); 1 wrong results; 2 CUDA unusable after a failed
capture. A crash is a signal (negative status in Python's terms, >128 in the shell).
"""
import os
import sys
import traceback
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402


def cuda_still_works(torch):
    try:
        x = torch.arange(1000, device="cuda", dtype=torch.float32)
        return float(x.sum().item()) == 499500.0
    except Exception as e:  # noqa: BLE001
        print("torch_graph: CUDA after the failed capture: %s: %s" % (type(e).__name__, e))
        return False


def main():
    import torch

    if not torch.cuda.is_available():
        print("torch_graph: torch.cuda.is_available() is False")
        return 2
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("torch_graph: torch %s, PYTORCH_NO_CUDA_MEMORY_CACHING=%s, shim %s"
          % (torch.__version__, os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "(unset)"),
             "loaded" if shim_loaded() else "not-loaded"))
    dev = torch.device("cuda", 0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 64),
    ).to(dev).eval()
    static_in = torch.randn(32, 64, device=dev)

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_in)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()

        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                static_out = model(static_in)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            print("torch_graph: capture refused: %s: %s" % (type(e).__name__, str(e).strip()[:400]))
            traceback.print_exc(limit=3, file=sys.stdout)
            try:
                torch.cuda.synchronize()
            except Exception as e2:  # noqa: BLE001
                print("torch_graph: synchronize after the failed capture: %s: %s"
                      % (type(e2).__name__, e2))
            if cuda_still_works(torch):
                print("torch_graph: CUDA works after the failed capture")
                return 3
            return 2
        print("torch_graph: captured")

        worst = 0.0
        for r in range(10):
            x = torch.randn(32, 64, device=dev)
            static_in.copy_(x)
            graph.replay()
            torch.cuda.synchronize()
            got = static_out.clone()
            want = model(x)
            torch.cuda.synchronize()
            diff = float((got - want).abs().max().item())
            scale = max(1.0, float(want.abs().max().item()))
            worst = max(worst, diff / scale)
        ok = worst <= 1e-5
        print("torch_graph: 10 replays, worst relative difference from eager %.3g" % worst)
        del graph
        torch.cuda.synchronize()
    print("torch_graph: %s" % ("ok" if ok else "FAILED (replay differs from eager)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
