#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/cupy_check.py: CuPy with its memory pools off (cupy.cuda.set_allocator(None) and
set_pinned_memory_allocator(None)), so that every array is a cudaMalloc/cudaFree: array ops
checked against NumPy, then allocation churn (2000 arrays of varied sizes, a few live at once, each
checked). Exit 0 and a last line `cupy_check: ok` when every check passed."""
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402
from named_checks import NamedChecks  # noqa: E402


def main():
    import numpy as np
    import cupy as cp

    cp.cuda.set_allocator(None)
    cp.cuda.set_pinned_memory_allocator(None)
    print("cupy_check: cupy %s, CUDA runtime %s, device %s, shim %s"
          % (cp.__version__, cp.cuda.runtime.runtimeGetVersion(),
             cp.cuda.runtime.getDeviceProperties(0)["name"].decode(errors="replace"),
             "loaded" if shim_loaded() else "not-loaded"))
    check = NamedChecks("cupy_check", 24)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 384)).astype(np.float64)
    b = rng.standard_normal((384, 256)).astype(np.float64)
    da, db = cp.asarray(a), cp.asarray(b)
    check("matmul", np.allclose(cp.asnumpy(da @ db), a @ b, rtol=1e-10, atol=1e-10))
    check("sum", abs(float(da.sum()) - float(a.sum())) < 1e-8)
    check("elementwise", np.allclose(cp.asnumpy(cp.exp(da) * 2 + da ** 2),
                                     np.exp(a) * 2 + a ** 2, rtol=1e-12))
    v = rng.standard_normal(1_000_003)
    dv = cp.asarray(v)
    check("sort", np.array_equal(cp.asnumpy(cp.sort(dv)), np.sort(v)))
    check("cumsum", np.allclose(cp.asnumpy(cp.cumsum(dv)), np.cumsum(v), rtol=1e-9, atol=1e-6))
    check("argmax", int(cp.argmax(dv)) == int(np.argmax(v)))
    big = cp.full((64 << 20) // 4, 3, dtype=cp.int32)  # 64 MiB
    check("fill_64MiB", int(big.sum(dtype=cp.int64)) == 3 * big.size)
    del big

    # Churn: up to 8 live arrays, each checked when it is dropped.
    sizes = [1, 100, 4096, 65536, 1 << 20, 3 << 20, 12 << 20]
    live = {}
    bad = 0
    for i in range(2000):
        k = int(rng.integers(0, 8))
        if k in live:
            arr, val = live.pop(k)
            if int(arr.sum(dtype=cp.int64)) != val * arr.size:
                bad += 1
        n = sizes[int(rng.integers(0, len(sizes)))] // 4 + 1
        val = i % 1000
        arr = cp.full(n, val, dtype=cp.int32)
        live[k] = (arr, val)
    for arr, val in live.values():
        if int(arr.sum(dtype=cp.int64)) != val * arr.size:
            bad += 1
    live.clear()
    check("churn_2000", bad == 0, "(%d bad arrays)" % bad)
    cp.cuda.Device(0).synchronize()
    pool = cp.get_default_memory_pool()
    check("pool_unused", pool.used_bytes() == 0 and pool.total_bytes() == 0,
          "(CuPy pool used %d, total %d)" % (pool.used_bytes(), pool.total_bytes()))
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
