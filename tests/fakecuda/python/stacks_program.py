# SPDX-License-Identifier: Apache-2.0
"""tests/fakecuda/python/stacks_program.py: a Python program that allocates through the fake driver
(tests/fakecuda) by ctypes, for python_stacks.sh: threads that call with the GIL released
(ctypes.CDLL, as PyTorch's bindings release it around ATen calls) and with it held
(ctypes.PyDLL), a class method between, an allocation at module level; optionally a fork whose
child allocates, and daemon threads still allocating while the interpreter exits.

    python3 stacks_program.py N [fork] [daemons]

Prints the line of the cuMemAlloc_v2 call as "alloc_line L" (the innermost frame the log must
name). Not a test by itself: python_stacks.sh reads the log.
"""
import ctypes
import os
import sys
import threading

cuda = ctypes.CDLL("libcuda.so.1")
held = ctypes.PyDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
ctx = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0


def alloc(lib, size):
    p = ctypes.c_uint64()
    assert lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)) == 0
    return p.value


ALLOC_LINE = alloc.__code__.co_firstlineno + 2


class Model:
    def forward(self, lib, size):
        return alloc(lib, size)


def worker(lib, n, size):
    assert cuda.cuCtxSetCurrent(ctx) == 0
    m = Model()
    for i in range(n):
        assert cuda.cuMemFree_v2(ctypes.c_uint64(m.forward(lib, size + i))) == 0


def spin(lib):
    assert cuda.cuCtxSetCurrent(ctx) == 0
    while True:
        cuda.cuMemFree_v2(ctypes.c_uint64(alloc(lib, 777)))


n = int(sys.argv[1])
print("alloc_line", ALLOC_LINE, flush=True)
threads = [threading.Thread(target=worker, args=(cuda if t % 2 else held, n, 1000 * (t + 1)))
           for t in range(4)]
for t in threads:
    t.start()
if "fork" in sys.argv[2:]:
    pid = os.fork()
    if pid == 0:  # the child: no log of its own (the parent's is not written), no hang
        p = ctypes.c_uint64()
        cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(4096))  # any answer; no hang
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0, status
for t in threads:
    t.join()
keep = alloc(cuda, 12345)
if "daemons" in sys.argv[2:]:
    for lib in (cuda, held, cuda, held):
        threading.Thread(target=spin, args=(lib,), daemon=True).start()
print("ok", flush=True)
