#!/usr/bin/env python3
"""tests/gpu/numba_check.py: Numba's CUDA target under the shim. Numba finds the driver itself
(ctypes or the cuda-python bindings, not cudart) and allocates with cuMemAlloc: device arrays
made, written by a kernel, checked and dropped in a churn loop (Numba frees them in batches);
then a reduction and a matrix product, each checked against NumPy. Exit 0 and a last line
`numba_check: ok` when every check passed."""
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402


def main():
    import numpy as np
    from numba import cuda

    @cuda.jit
    def fill(out, value):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = value + i % 7

    @cuda.jit
    def matmul(a, b, c):
        i, j = cuda.grid(2)
        if i < c.shape[0] and j < c.shape[1]:
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc

    dev = cuda.get_current_device()
    print("numba_check: numba %s, device %s, shim %s"
          % (__import__("numba").__version__, dev.name.decode() if isinstance(dev.name, bytes)
             else dev.name, "loaded" if shim_loaded() else "not-loaded"))
    failures = []

    def check(name, ok, detail=""):
        print("numba_check: %-20s %s %s" % (name, "ok" if ok else "FAILED", detail))
        if not ok:
            failures.append(name)

    rng = np.random.default_rng(1)
    sizes = [1, 100, 4096, 65536, 1 << 20, 3 << 20]
    live = {}
    bad = 0
    for i in range(1500):
        k = int(rng.integers(0, 8))
        if k in live:
            arr, val = live.pop(k)
            host = arr.copy_to_host()
            want = (val + np.arange(host.size) % 7).astype(np.int32)
            if not np.array_equal(host, want):
                bad += 1
            del arr
        n = sizes[int(rng.integers(0, len(sizes)))] // 4 + 1
        arr = cuda.device_array(n, dtype=np.int32)
        val = i % 1000
        fill[(n + 255) // 256, 256](arr, val)
        live[k] = (arr, val)
    live.clear()
    check("churn_1500_arrays", bad == 0, "%d bad" % bad)

    a = rng.standard_normal((200, 150)).astype(np.float64)
    b = rng.standard_normal((150, 120)).astype(np.float64)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dc = cuda.device_array((200, 120), dtype=np.float64)
    matmul[(13, 8), (16, 16)](da, db, dc)
    check("matmul", np.allclose(dc.copy_to_host(), a @ b, rtol=1e-10, atol=1e-10))
    v = rng.standard_normal(1_000_003)
    check("sum", abs(cuda.reduce(lambda x, y: x + y)(v) - v.sum()) < 1e-6)
    cuda.synchronize()
    if failures:
        print("numba_check: FAILED: %s" % ", ".join(failures))
        return 1
    print("numba_check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
