// SPDX-License-Identifier: Apache-2.0
// tests/gpu/driver_common.h: what the driver-API test programs (no runtime, -lcuda) share:
// CU_CHECK, the name of a result code, and the start (device 0's primary context made current, one
// banner line). Header-only. The runtime-API programs use common.h.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#include "shim_probe.h"

// Any driver call that must succeed: on failure print where and why and exit 1.
#define CU_CHECK(call)                                                                          \
  do {                                                                                          \
    CUresult cu_err_ = (call);                                                                  \
    if (cu_err_ != CUDA_SUCCESS) {                                                              \
      const char* name_ = nullptr;                                                              \
      const char* str_ = nullptr;                                                               \
      cuGetErrorName(cu_err_, &name_);                                                          \
      cuGetErrorString(cu_err_, &str_);                                                         \
      fprintf(stderr, "CUDA driver error %s:%d: %s -> %d %s (%s)\n", __FILE__, __LINE__, #call, \
              int(cu_err_), name_ ? name_ : "?", str_ ? str_ : "?");                            \
      fflush(stdout);                                                                           \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

inline const char* cu_name(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}

// cuInit, device 0's primary context retained and made current, and the banner
// "PROGRAM: device NAME, driver N, shim loaded|not-loaded, CUDAPOOL_CONF=..." that run.sh reads.
inline CUcontext start_on_primary(const char* program, CUdevice* dev) {
  CU_CHECK(cuInit(0));
  CU_CHECK(cuDeviceGet(dev, 0));
  CUcontext ctx = nullptr;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, *dev));
  CU_CHECK(cuCtxSetCurrent(ctx));
  char name[256] = {0};
  CU_CHECK(cuDeviceGetName(name, sizeof name, *dev));
  int drv = 0;
  CU_CHECK(cuDriverGetVersion(&drv));
  const char* conf = getenv("CUDAPOOL_CONF");
  printf("%s: device %s, driver %d, shim %s, CUDAPOOL_CONF=%s\n", program, name, drv,
         shim_loaded() ? "loaded" : "not-loaded", conf ? conf : "(unset)");
  return ctx;
}
