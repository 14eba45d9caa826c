#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/vmm_granularity.py: what the real driver says of a VMM allocation whose size is not a
multiple of its granularity, the fact behind the conf parser's refusal of an odd
large_segment_size_mb with expandable segments (config/key_values.cpp): cuMemCreate of the
granularity (2 MiB on an H200) must succeed, of 21 MiB must fail with CUDA_ERROR_INVALID_VALUE.
Through ctypes on libcuda.so.1, without the shim (run.sh's hostile section runs it raw). Prints
`granularity N bytes (minimum), M (recommended)` and one line per size; exit 0 when the driver
answers as expected.
"""
import ctypes
import sys

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CUDA_ERROR_INVALID_VALUE = 1


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class Prop(ctypes.Structure):   # CUmemAllocationProp (cuda.h, CUDA 13)
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", AllocFlags)]


def main():
    cu = ctypes.CDLL("libcuda.so.1")
    check = lambda what, rc: rc == 0 or sys.exit("%s: CUresult %d" % (what, rc))
    check("cuInit", cu.cuInit(0))
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
    check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    check("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    prop = Prop(type=CU_MEM_ALLOCATION_TYPE_PINNED,
                location=Location(type=CU_MEM_LOCATION_TYPE_DEVICE, id=dev.value))
    minimum, recommended = ctypes.c_size_t(), ctypes.c_size_t()
    check("cuMemGetAllocationGranularity",
          cu.cuMemGetAllocationGranularity(ctypes.byref(minimum), ctypes.byref(prop), 0))
    check("cuMemGetAllocationGranularity",
          cu.cuMemGetAllocationGranularity(ctypes.byref(recommended), ctypes.byref(prop), 1))
    print("granularity %d bytes (minimum), %d (recommended)" % (minimum.value, recommended.value))
    ok = True
    for mib, want in ((minimum.value >> 20, 0), (21, CUDA_ERROR_INVALID_VALUE)):
        handle = ctypes.c_ulonglong()
        rc = cu.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(mib << 20), ctypes.byref(prop),
                            ctypes.c_ulonglong(0))
        print("cuMemCreate(%d MiB): CUresult %d (expected %d)" % (mib, rc, want))
        ok = ok and rc == want
        if rc == 0:
            cu.cuMemRelease(handle)
    cu.cuDevicePrimaryCtxRelease(dev)
    print("vmm_granularity: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
