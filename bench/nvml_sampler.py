# SPDX-License-Identifier: Apache-2.0
"""bench/nvml_sampler.py: the device's used memory as NVML reports it (what nvidia-smi shows),
read by a thread every few milliseconds while a benchmark's loop runs; shared by
bench/variable_inputs.py and bench/steady_train.py (imported from their folder, not run).

Not a measure of one process: NVML's `used` is the whole device's (the driver's own reserve, the
CUDA context, every process on it). Figures are raw bytes; the caller reads the base (before CUDA
starts in its process) separately, nothing is subtracted here. Needs pynvml (nvidia-ml-py).
"""
import os
import threading
import time


def _handle(pynvml):
    """The NVML handle of the device CUDA calls 0 in this process (the first entry of
    CUDA_VISIBLE_DEVICES when that is set: an index or a GPU-... UUID)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if first.startswith("GPU-"):
        return pynvml.nvmlDeviceGetHandleByUUID(first)
    return pynvml.nvmlDeviceGetHandleByIndex(int(first) if first.isdigit() else 0)


class Sampler:
    """used(): one reading now. start() ... stop(): a thread reads every period_s seconds in
    between; stop() returns {"peak", "mean" (time-weighted over the readings), "samples",
    "seconds"}, all in bytes and seconds."""

    def __init__(self, period_s=0.005):
        import pynvml
        pynvml.nvmlInit()
        self._nvml = pynvml
        self._h = _handle(pynvml)
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread = None
        self._times = []
        self._values = []

    def used(self):
        return int(self._nvml.nvmlDeviceGetMemoryInfo(self._h).used)

    def _run(self):
        while True:
            self._values.append(self.used())
            self._times.append(time.perf_counter())
            if self._stop.wait(self.period_s):
                break

    def start(self):
        self._times, self._values = [], []
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()
        self._values.append(self.used())
        self._times.append(time.perf_counter())
        t, v = self._times, self._values
        span = t[-1] - t[0]
        if span > 0:
            mean = sum(v[i] * (t[i + 1] - t[i]) for i in range(len(v) - 1)) / span
        else:
            mean = float(v[-1])
        return {"peak": max(v), "mean": int(mean), "samples": len(v), "seconds": span}
