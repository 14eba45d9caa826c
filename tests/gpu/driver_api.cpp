// SPDX-License-Identifier: Apache-2.0
// tests/gpu/driver_api.cpp: the driver API only (no runtime): cuInit, the primary context,
// cuMemAlloc/cuMemFree pairs of several sizes with up to RING blocks live, each block set with
// cuMemsetD8 to its own byte and read back (start, middle, end) with cuMemcpyDtoH before it is
// freed; then a bare loop of pairs for the time per pair. Built with -lcuda -cudart=none.
//
//   driver_api [ITERS]      (default 10000 pairs per size and loop)
//
// Output as alloc_basic: per size the times, then cuMemGetInfo and NVML before/after and
// "cached: yes|no|unknown". Exit 0 when every check passed.
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "driver_common.h"
#include "nvml_lite.h"
#include "shim_probe.h"

namespace {

constexpr int RING = 4;
constexpr size_t PROBE = 4096;  // bytes read back at the start, middle and end of a block

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

struct Live {
  CUdeviceptr p = 0;
  size_t size = 0;
  unsigned char value = 0;
};

// Number of bytes in the probed windows that are not `value`.
size_t verify(const Live& b, std::vector<unsigned char>& buf) {
  size_t bad = 0;
  size_t n = b.size < PROBE ? b.size : PROBE;
  size_t offs[3] = {0, (b.size / 2) & ~size_t(255), b.size - n};
  if (offs[1] + n > b.size) offs[1] = b.size - n;
  for (size_t off : offs) {
    CU_CHECK(cuMemcpyDtoH(buf.data(), b.p + off, n));
    for (size_t i = 0; i < n; ++i) bad += (buf[i] != b.value);
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  long iters = argc > 1 ? atol(argv[1]) : 10000;
  if (iters < 1) iters = 1;
  const size_t sizes[] = {512, size_t(1) << 20, size_t(8) << 20, size_t(64) << 20};

  CUdevice dev;
  start_on_primary("driver_api", &dev);
  char bus[64] = {0};
  CU_CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
  if (!nvml_lite::open(bus)) printf("driver_api: NVML not usable: %s\n", nvml_lite::why());

  size_t free0 = 0, total = 0;
  CU_CHECK(cuMemGetInfo(&free0, &total));
  long long nvml0 = nvml_lite::used_bytes();

  std::vector<unsigned char> buf(PROBE);
  int failures = 0;
  unsigned counter = 0;
  for (size_t size : sizes) {
    Live ring[RING];
    long reused = 0, overlap = 0;
    size_t bad = 0;
    double t0 = now_s();
    for (long i = 0; i < iters; ++i) {
      Live& slot = ring[i % RING];
      CUdeviceptr freed = 0;
      if (slot.p) {
        bad += verify(slot, buf);
        CU_CHECK(cuMemFree(slot.p));
        freed = slot.p;
        slot.p = 0;
      }
      CUdeviceptr p = 0;
      CU_CHECK(cuMemAlloc(&p, size));
      if (!p) {
        printf("ERROR cuMemAlloc(%zu) returned success and a null pointer\n", size);
        return 1;
      }
      if (p == freed) ++reused;
      for (const Live& o : ring)
        if (o.p && o.p < p + size && p < o.p + o.size) ++overlap;
      // 1..255: never 0, so a fresh zeroed page never passes for the pattern.
      unsigned char v = static_cast<unsigned char>(1 + (counter++ % 255));
      CU_CHECK(cuMemsetD8(p, v, size));
      slot.p = p;
      slot.size = size;
      slot.value = v;
    }
    for (Live& slot : ring) {
      if (!slot.p) continue;
      bad += verify(slot, buf);
      CU_CHECK(cuMemFree(slot.p));
      slot.p = 0;
    }
    CU_CHECK(cuCtxSynchronize());
    double checked_s = now_s() - t0;

    double t1 = now_s();
    for (long i = 0; i < iters; ++i) {
      CUdeviceptr p = 0;
      CU_CHECK(cuMemAlloc(&p, size));
      CU_CHECK(cuMemFree(p));
    }
    double bare_s = now_s() - t1;
    printf(
        "size %zu: checked pairs %.2f us/pair, bare pairs %.0f ns/pair, iters %ld, "
        "same-pointer-again %ld, overlapping-live %ld, bad bytes %zu\n",
        size, checked_s / iters * 1e6, bare_s / iters * 1e9, iters, reused, overlap, bad);
    if (bad || overlap) {
      printf("ERROR size %zu: %zu bad bytes, %ld overlapping live blocks\n", size, bad, overlap);
      ++failures;
    }
  }

  CU_CHECK(cuCtxSynchronize());
  size_t free1 = 0;
  CU_CHECK(cuMemGetInfo(&free1, &total));
  long long nvml1 = nvml_lite::used_bytes();
  printf("cuMemGetInfo free: before %.1f MiB, after all frees %.1f MiB (change %+.1f MiB)\n",
         free0 / 1048576.0, free1 / 1048576.0, (double(free1) - double(free0)) / 1048576.0);
  if (nvml0 >= 0 && nvml1 >= 0) {
    double held = double(nvml1 - nvml0);
    printf("NVML used: before %.1f MiB, after all frees %.1f MiB (still held %+.1f MiB)\n",
           nvml0 / 1048576.0, nvml1 / 1048576.0, held / 1048576.0);
    printf("cached: %s\n", held >= 48.0 * 1048576.0 ? "yes" : "no");
  } else {
    printf("cached: unknown (NVML: %s)\n", nvml_lite::why());
  }
  CU_CHECK(cuDevicePrimaryCtxRelease(dev));
  printf("driver_api: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
