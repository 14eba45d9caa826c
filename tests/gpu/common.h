// SPDX-License-Identifier: Apache-2.0
// tests/gpu/common.h: what the runtime-API test programs share: CHECK, a clock, whether the shim is
// loaded, and the pattern kernels (fill a block with a seed-dependent pattern; count the words that
// differ from it). Header-only; include from one .cu file per program.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nvml_lite.h"
#include "shim_probe.h"

// Any CUDA call that must succeed: on failure print where and why and exit 1.
#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t check_err_ = (call);                                                  \
    if (check_err_ != cudaSuccess) {                                                  \
      fprintf(stderr, "CUDA error %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call, \
              cudaGetErrorName(check_err_), cudaGetErrorString(check_err_));          \
      fflush(stdout);                                                                 \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

// After a kernel launch.
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline long long now_ns() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

inline void print_banner(const char* prog) {
  int dev = 0, rt = 0, drv = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaRuntimeGetVersion(&rt));
  CHECK(cudaDriverGetVersion(&drv));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const char* conf = getenv("CUDAPOOL_CONF");
  const char* dis = getenv("CUDAPOOL_DISABLE");
  printf("%s: device %d %s, runtime %d, driver %d, shim %s, CUDAPOOL_CONF=%s CUDAPOOL_DISABLE=%s\n",
         prog, dev, prop.name, rt, drv, shim_loaded() ? "loaded" : "not-loaded",
         conf ? conf : "(unset)", dis ? dis : "(unset)");
}

// Opens NVML for the current device (see nvml_lite.h).
inline bool open_nvml_for_current_device() {
  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  char bus[64] = {0};
  CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
  return nvml_lite::open(bus);
}

// ---- pattern kernels ----------------------------------------------------------------------------

__host__ __device__ inline uint32_t pattern_word(uint64_t i, uint32_t seed) {
  uint32_t x =
      static_cast<uint32_t>(i) * 0x9E3779B1u ^ static_cast<uint32_t>(i >> 32) * 0x7FEB352Du;
  x += seed * 0x85EBCA6Bu + 0x6A09E667u;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

__global__ void fill_kernel(uint32_t* p, size_t nwords, uint32_t seed) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nwords;
       i += stride)
    p[i] = pattern_word(i, seed);
}

// Adds the number of words that differ from the pattern to *errors.
__global__ void check_kernel(const uint32_t* p, size_t nwords, uint32_t seed,
                             unsigned long long* errors) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nwords;
       i += stride)
    bad += (p[i] != pattern_word(i, seed));
  if (bad) atomicAdd(errors, bad);
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins spin_ns (thread 0 of each block, on the global timer), then adds the sum of all words of p
// to *sum. With a small grid the spinning kernel leaves most SMs free for other streams' work.
__global__ void spin_then_sum(const uint32_t* p, size_t nwords, unsigned long long spin_ns,
                              unsigned long long* sum) {
  if (spin_ns) {
    if (threadIdx.x == 0) {
      unsigned long long t0 = globaltimer_ns();
      while (globaltimer_ns() - t0 < spin_ns) {
      }
    }
    __syncthreads();
  }
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  unsigned long long acc = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nwords;
       i += stride)
    acc += static_cast<unsigned long long>(p[i]) * ((i & 7) + 1);
  atomicAdd(sum, acc);
}

inline unsigned grid_for(size_t nwords) {
  size_t g = (nwords + 255) / 256;
  if (g > 2048) g = 2048;
  if (g == 0) g = 1;
  return static_cast<unsigned>(g);
}

inline void fill_async(void* p, size_t bytes, uint32_t seed, cudaStream_t s = 0) {
  size_t n = bytes / 4;
  fill_kernel<<<grid_for(n), 256, 0, s>>>(static_cast<uint32_t*>(p), n, seed);
  CHECK_LAUNCH();
}

inline void check_async(const void* p, size_t bytes, uint32_t seed, unsigned long long* d_errors,
                        cudaStream_t s = 0) {
  size_t n = bytes / 4;
  check_kernel<<<grid_for(n), 256, 0, s>>>(static_cast<const uint32_t*>(p), n, seed, d_errors);
  CHECK_LAUNCH();
}

inline unsigned long long read_counter(const unsigned long long* d) {
  unsigned long long h = 0;
  CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

inline const char* human(double bytes, char* buf, size_t n) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  snprintf(buf, n, "%.1f %s", bytes, unit[u]);
  return buf;
}
