#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/numba_check.py: Numba's CUDA target under the shim. Numba finds the driver itself
(ctypes or the cuda-python bindings, not cudart) and allocates with cuMemAlloc: device arrays
made from host data, copied device to device, checked on the host and dropped in a churn loop
(Numba frees them in batches). No kernels: Numba's JIT fails on the H200 image with or without
the shim (numba-cuda 0.68 calls numpy.row_stack, which its NumPy no longer has), so data moves by
copies only. Exit 0 and a last line `numba_check: ok` when every check passed."""
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402
from named_checks import NamedChecks  # noqa: E402


def main():
    import numpy as np
    from numba import cuda

    dev = cuda.get_current_device()
    print("numba_check: numba %s, device %s, shim %s"
          % (__import__("numba").__version__, dev.name.decode() if isinstance(dev.name, bytes)
             else dev.name, "loaded" if shim_loaded() else "not-loaded"))
    check = NamedChecks("numba_check", 20)

    rng = np.random.default_rng(1)
    sizes = [1, 100, 4096, 65536, 1 << 20, 3 << 20]
    live = {}
    bad = 0
    for i in range(1500):
        k = int(rng.integers(0, 8))
        if k in live:
            arr, want = live.pop(k)
            if not np.array_equal(arr.copy_to_host(), want):
                bad += 1
            del arr
        n = sizes[int(rng.integers(0, len(sizes)))] // 4 + 1
        want = (i % 1000 + np.arange(n) % 7).astype(np.int32)
        staged = cuda.to_device(want)  # a device array from host data
        arr = cuda.device_array(n, dtype=np.int32)
        arr.copy_to_device(staged)  # device to device
        del staged
        live[k] = (arr, want)
    for arr, want in live.values():
        if not np.array_equal(arr.copy_to_host(), want):
            bad += 1
    live.clear()
    check("churn_1500_arrays", bad == 0, "%d bad" % bad)

    big = rng.standard_normal(16 << 20)  # 128 MiB
    dbig = cuda.to_device(big)
    check("copy_128MiB", np.array_equal(dbig.copy_to_host(), big))
    del dbig
    cuda.synchronize()
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
