#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/conf_check.py: PyTorch with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1), so that
every tensor is a cudaMalloc/cudaFree, under a pool setting of the shim (CUDAPOOL_CONF, set by
tests/gpu/run.sh). Checks: allocation churn (3000 tensors of 256 B to 64 MiB, up to 16 live, each
filled and checked when dropped), then 1 GiB tensors until out-of-memory, recovery after freeing
them, and cudaMemGetInfo's total. With CONF_CHECK_FRACTION=F (the conf's
per_process_memory_fraction) the total must be F of the device's memory and out-of-memory must
come at that cap. Exit 0 and a last line `conf_check: ok` when every check passed. Not a benchmark.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402
from named_checks import NamedChecks  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20


def churn(torch, check):
    rng = random.Random(7)
    live = []  # (tensor, value)
    bad = 0
    for i in range(3000):
        n = max(1, int(2 ** rng.uniform(6, 24)))  # float32 elements: 256 B .. 64 MiB
        value = float(i % 251)
        live.append((torch.full((n,), value, device="cuda"), value))
        if len(live) > 16:
            t, v = live.pop(rng.randrange(len(live)))
            if not bool((t == v).all()):
                bad += 1
    for t, v in live:
        if not bool((t == v).all()):
            bad += 1
    torch.cuda.synchronize()
    check("churn", bad == 0, "3000 tensors of 256 B-64 MiB, up to 16 live: %d bad" % bad)


def out_of_memory(torch, check, cap):
    held = []
    oom = False
    try:
        while len(held) < 256:
            held.append(torch.empty(GIB, dtype=torch.uint8, device="cuda"))
    except (torch.cuda.OutOfMemoryError, torch.AcceleratorError) as e:
        # With its cache off, PyTorch 2.11 reports a failed cudaMalloc as AcceleratorError.
        oom = "out of memory" in str(e)
        if not oom:
            raise
    got = len(held)
    check("oom_reached", oom, "%d GiB allocated before out-of-memory" % got)
    if cap is not None:
        # Other memory of the process (context, kernels, the churn's cached segments) counts too.
        check("oom_at_cap", cap - 3 * GIB <= got * GIB <= cap,
              "%d GiB against a cap of %.1f GiB" % (got, cap / GIB))
    held.clear()
    torch.cuda.synchronize()
    t = torch.full((4 * GIB // 4,), 5.0, device="cuda")
    check("after_oom_4GiB", bool((t == 5.0).all()), "4 GiB filled and checked after the frees")
    del t


def main():
    import torch

    fraction = os.environ.get("CONF_CHECK_FRACTION")
    conf = os.environ.get("CUDAPOOL_CONF", "(unset)")
    print("conf_check: torch %s, device %s, shim %s, CUDAPOOL_CONF=%s, caching %s"
          % (torch.__version__, torch.cuda.get_device_name(0),
             "loaded" if shim_loaded() else "not-loaded", conf,
             "off" if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1" else "ON"))
    check = NamedChecks("conf_check", 16)
    device_total = torch.cuda.get_device_properties(0).total_memory
    cap = None
    if fraction is not None:
        cap = int(float(fraction) * device_total)
        free, total = torch.cuda.mem_get_info()
        check("total_is_cap", abs(total - cap) <= 2 * MIB,
              "cudaMemGetInfo total %.2f GiB, %s of %.2f GiB is %.2f GiB; free %.2f GiB"
              % (total / GIB, fraction, device_total / GIB, cap / GIB, free / GIB))
    churn(torch, check)
    out_of_memory(torch, check, cap)
    free, total = torch.cuda.mem_get_info()
    check("free_after", 0 < free <= total,
          "cudaMemGetInfo after all frees: free %.2f of %.2f GiB" % (free / GIB, total / GIB))
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
