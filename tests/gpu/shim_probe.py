# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/shim_probe.py: whether libcudapool is mapped into this process (LD_PRELOAD took
effect), for the Python GPU checks and benchmarks."""


def shim_loaded():
    try:
        with open("/proc/self/maps") as f:
            return any("libcudapool" in line for line in f)
    except OSError:
        return False
