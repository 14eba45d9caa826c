// SPDX-License-Identifier: Apache-2.0
// bench/driver_bench.h: what the standalone driver-API benchmarks (vmm_costs.cpp,
// vmm_interference.cpp) share: a driver call's check (a failure ends the program, named by
// g_bench_name, which main sets), a wall clock in ms, and cuMemCreate's properties for pinned
// memory on a device. Header-only: each benchmark is one g++ line on the GPU machine. Not a test
// helper, and not the shim's (shim/pools/cuda_backend.cpp maps its own).
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

inline const char* g_bench_name = "bench";

inline void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* s = nullptr;
  cuGetErrorString(r, &s);
  std::fprintf(stderr, "%s: %s failed: %s\n", g_bench_name, what, s ? s : "?");
  std::exit(1);
}

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

inline CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}
