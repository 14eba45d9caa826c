// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/symbolized_alloc.cpp: allocates from one function of a known name and
// source line (symtest::allocate_here, the line marked ALLOCATING LINE), built with -g
// (tests/fakecuda/CMakeLists.txt), so that tests/cli/symbolized_frames.sh can check that the report
// and the memory_viz export name that frame by its function and line, read from this program's own
// file (tools/analyze/symbolizer.h). Linked with -lcuda against the fake driver; run under the shim
// with CUDAPOOL_BACKTRACE. Four blocks of 1 MiB, the last kept to the end (a leak too). Not a
// scenario of scenarios.cpp; checks nothing itself. Usage: symbolized_alloc
#include <cuda.h>

#include <cstdio>

namespace symtest {

// The driver's call, one frame below allocate_here: the shim's backtrace may leave out the frame
// that called the driver (its capture inlined into the hook, as in an LTO build), never this one's
// caller.
__attribute__((noinline)) int call_driver(CUdeviceptr* out, unsigned long bytes) {
  const CUresult r = cuMemAlloc(out, bytes);
  asm volatile("" ::: "memory");  // the calls stay calls, not jumps
  return static_cast<int>(r);
}

__attribute__((noinline)) int allocate_here(CUdeviceptr* out, unsigned long bytes) {
  const int r = call_driver(out, bytes);  // ALLOCATING LINE
  asm volatile("" ::: "memory");
  return r;
}

}  // namespace symtest

int main() {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "symbolized_alloc: no context\n");
    return 1;
  }
  CUdeviceptr p[4] = {};
  for (CUdeviceptr& x : p) {
    if (symtest::allocate_here(&x, 1ul << 20) != 0) {
      std::fprintf(stderr, "symbolized_alloc: cuMemAlloc failed\n");
      return 1;
    }
  }
  for (int i = 0; i < 3; ++i) cuMemFree(p[i]);
  std::puts("symbolized_alloc: ok");
  return 0;
}
