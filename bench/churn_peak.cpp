// SPDX-License-Identifier: Apache-2.0
// bench/churn_peak.cpp: the device memory a shim setting costs, on a CPU. Runs the tensor churn of
// bench/torch_churn.py (8 slots; sizes 256 B, 4 KiB, 64 KiB, 1 MiB, 4 MiB, 16 MiB; each new block
// allocated before the one it replaces is freed) through cuMemAlloc/cuMemFree against the fake
// driver (tests/fakecuda), and prints the peak of the bytes the driver handed out. Run it under the
// shim with the setting to compare:
//
//   FAKECUDA_DEVICE_MEMORY=8G CUDAPOOL_CONF=thread_cache:always
//     LD_PRELOAD=.../libcudapool.so build/bench/churn_peak [SEED] [ITERATIONS]
//
// Memory, not time: the fake's speed means nothing. Not a test (what is acceptable is a judgment
// the numbers inform).
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "fakecuda_control.h"

int main(int argc, char** argv) {
  const unsigned seed = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 0;
  const long iterations = argc > 2 ? std::atol(argv[2]) : 300000;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "churn_peak: no device\n");
    return 1;
  }
  const size_t sizes[] = {256, 4096, 65536, size_t(1) << 20, size_t(4) << 20, size_t(16) << 20};
  std::mt19937 rng(seed);
  CUdeviceptr slots[8] = {};
  size_t peak = 0;
  for (long i = 0; i < iterations; ++i) {
    const unsigned slot = rng() % 8;
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, sizes[rng() % 6]) != CUDA_SUCCESS) {
      std::fprintf(stderr, "churn_peak: allocation %ld failed\n", i);
      return 1;
    }
    if (slots[slot] != 0) cuMemFree(slots[slot]);
    slots[slot] = p;
    const size_t in_use = fakecuda_bytes_in_use(0);
    if (in_use > peak) peak = in_use;
  }
  for (CUdeviceptr p : slots) {
    if (p != 0) cuMemFree(p);
  }
  const char* conf = std::getenv("CUDAPOOL_CONF");
  std::printf("churn_peak: seed %u, %ld iterations, CUDAPOOL_CONF=%s: peak %.1f MiB\n", seed,
              iterations, conf != nullptr ? conf : "(unset)",
              static_cast<double>(peak) / (1 << 20));
  return 0;
}
