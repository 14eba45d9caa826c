# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/nvml.py: the driver's own figure for a process, what nvidia-smi shows beside
the pool's reserved bytes (`cudapool top`, `cudapool stats`; docs/control.md, "The driver's
figure"), read from NVML through ctypes (no Python package needed):

    Nvml()                    opens libnvidia-ml.so.1 (or $CUDAPOOL_NVML_LIBRARY) and nvmlInit_v2;
                              .why_not: None when it works, else why there is no figure
    .read()                   -> Reading: per NVML device its uuid, name, {pid: used bytes}
    .close()                  nvmlShutdown
    figures(reading, pid, devices, environ) -> (total or None, {device ordinal: bytes or None})

NVML numbers the GPUs in PCI bus order and ignores CUDA_VISIBLE_DEVICES; the pool numbers them as
the process's CUDA does. A pool's device is matched through the process's CUDA_VISIBLE_DEVICES
(indices or GPU- UUIDs) when CUDA's order is NVML's (CUDA_DEVICE_ORDER=PCI_BUS_ID, or every GPU
the same model), and only when NVML lists the process on that GPU; else, when the process is on
one GPU and the pool has one device, those two; otherwise n/a. Not here: the tables
(controltable.py).
"""

import ctypes
import os

LIBRARY = "libnvidia-ml.so.1"
SUCCESS, INSUFFICIENT_SIZE = 0, 7
NOT_AVAILABLE = (1 << 64) - 1        # NVML_VALUE_NOT_AVAILABLE for usedGpuMemory
FILL = 0xAA


class Reading:
    """One look at every GPU: devices[i] = {"uuid", "name", "used": {pid: bytes or None}}."""

    def __init__(self, devices):
        self.devices = devices


class Nvml:
    def __init__(self, library=None):
        self.lib, self.why_not = None, None
        path = library or os.environ.get("CUDAPOOL_NVML_LIBRARY") or LIBRARY
        try:
            lib = ctypes.CDLL(path)
            for name in ("nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
                         "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlShutdown"):
                getattr(lib, name).restype = ctypes.c_int
        except (OSError, AttributeError) as e:
            self.why_not = "no NVML (%s)" % e
            return
        r = lib.nvmlInit_v2()
        if r != SUCCESS:
            self.why_not = "NVML: nvmlInit_v2 failed: %s" % error_string(lib, r)
            return
        self.lib = lib

    def close(self):
        if self.lib is not None:
            self.lib.nvmlShutdown()
            self.lib = None

    def read(self):
        """A Reading, or None (why_not says why) when NVML is absent or fails."""
        if self.lib is None:
            return None
        lib, count = self.lib, ctypes.c_uint(0)
        r = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
        if r != SUCCESS:
            self.why_not = "NVML: nvmlDeviceGetCount_v2 failed: %s" % error_string(lib, r)
            return None
        devices = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            r = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(handle))
            if r != SUCCESS:
                devices.append({"uuid": None, "name": None, "used": {}})
                continue
            devices.append({"uuid": text(lib, "nvmlDeviceGetUUID", handle),
                            "name": text(lib, "nvmlDeviceGetName", handle),
                            "used": processes(lib, handle)})
        return Reading(devices)


def error_string(lib, r):
    try:
        f = lib.nvmlErrorString
        f.restype = ctypes.c_char_p
        return "%s (%d)" % (f(r).decode("utf-8", "replace"), r)
    except (AttributeError, OSError):
        return "error %d" % r


def text(lib, function, handle):
    """A string property (the UUID, the name), or None where the library has no such function."""
    f = getattr(lib, function, None)
    if f is None:
        return None
    buf = ctypes.create_string_buffer(96)
    if f(handle, buf, ctypes.c_uint(len(buf))) != SUCCESS:
        return None
    return buf.value.decode("utf-8", "replace")


def processes(lib, handle):
    """{pid: bytes or None} of the compute processes on one GPU. The entries' size differs
    between drivers (24 bytes: pid, usedGpuMemory, gpuInstanceId, computeInstanceId; 32 with
    usedGpuCcProtectedMemory, from R535), so it is measured: the buffer is filled with 0xAA and
    what the driver wrote tells the stride (pid at 0 and usedGpuMemory at 8 in both)."""
    f = lib.nvmlDeviceGetComputeRunningProcesses_v3
    count = ctypes.c_uint(0)
    r = f(handle, ctypes.byref(count), None)
    for _ in range(4):
        if r == SUCCESS and count.value == 0:
            return {}
        if r not in (SUCCESS, INSUFFICIENT_SIZE):
            return {}
        n = count.value + 8
        buf = (ctypes.c_ubyte * (32 * n))(*([FILL] * (32 * n)))
        count = ctypes.c_uint(n)
        r = f(handle, ctypes.byref(count), buf)
        if r == SUCCESS:
            return parse(bytes(buf), count.value)
    return {}


def parse(raw, count):
    if count == 0:
        return {}
    end = len(raw.rstrip(bytes([FILL])))
    stride = 32 if end > 24 * count else 24
    used = {}
    for k in range(count):
        entry = raw[k * stride:k * stride + 16]
        pid = int.from_bytes(entry[0:4], "little")
        value = int.from_bytes(entry[8:16], "little")
        value = None if value == NOT_AVAILABLE else value
        if pid in used and used[pid] is not None and value is not None:
            value += used[pid]
        used[pid] = value
    return used


def visible(reading, environ):
    """The NVML indices of the process's CUDA devices in its ordinal order, or None when that
    cannot be told (MIG devices, an unknown UUID, CUDA's default fastest-first order over GPUs
    of different models)."""
    n = len(reading.devices)
    value = environ.get("CUDA_VISIBLE_DEVICES") if environ is not None else None
    names = {d["name"] for d in reading.devices}
    pci_order = (environ or {}).get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" or len(names) <= 1
    if value is None:
        return list(range(n)) if pci_order else None
    out = []
    for entry in value.split(","):
        entry = entry.strip()
        if entry.isdigit():
            if not pci_order:
                return None
            if int(entry) >= n:
                break                 # CUDA stops at the first entry that is not a device
            out.append(int(entry))
        elif entry.startswith("GPU-"):
            found = [i for i, d in enumerate(reading.devices)
                     if d["uuid"] and d["uuid"].startswith(entry)]
            if len(found) != 1:
                return None
            out.append(found[0])
        else:
            return None if entry else out
    return out


def figures(reading, pid, devices, environ):
    """(the process's total over every GPU NVML lists it on, or None; {ordinal: bytes or None})
    for the pool's device ordinals devices."""
    if reading is None:
        return None, {d: None for d in devices}
    on = {i: d["used"][pid] for i, d in enumerate(reading.devices) if pid in d["used"]}
    total = None
    if on and all(v is not None for v in on.values()):
        total = sum(on.values())
    order = visible(reading, environ)
    out = {}
    for d in devices:
        index = order[d] if order is not None and d < len(order) else None
        out[d] = on.get(index)
    if order is None and len(on) == 1 and len(devices) == 1:
        out[devices[0]] = next(iter(on.values()))
    return total, out
