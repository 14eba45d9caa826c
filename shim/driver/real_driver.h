// SPDX-License-Identifier: Apache-2.0
// shim/driver/real_driver.h: the real driver's entry points, looked up once by exact versioned
// name in the libcuda.so.1 the process has loaded (never loaded by the shim itself). Every call the
// shim makes to CUDA goes through this table, so no internal call can land on one of the shim's own
// exported hooks. Also the C library's own dlsym, which the table's lookups and the exported dlsym
// use (found on first use, safe before anything is initialised). Not thread-unsafe: load() is
// idempotent and guarded. Not here: the exported dlsym (interpose/dlsym_hook.cpp), the hooks.
#pragma once

#include <atomic>

#include "shim/driver/cuda_api.h"

namespace cudapool::shim {

// The real functions of driver_functions.def, null until load_real_driver() found them.
struct RealDriver {
#define CUDAPOOL_DRIVER_CALLED(name, ret, params) ret(*name) params = nullptr;
#define CUDAPOOL_DRIVER_HOOKED CUDAPOOL_DRIVER_CALLED
#include "shim/driver/driver_functions.def"
#undef CUDAPOOL_DRIVER_HOOKED
#undef CUDAPOOL_DRIVER_CALLED
};

namespace detail {
extern RealDriver g_real;
extern std::atomic<bool> g_real_loaded;
bool load_real_driver_slow();
}  // namespace detail

// The table; its entries are null until load_real_driver() found the loaded driver.
inline const RealDriver& real() {
  return detail::g_real;
}

// Looks the functions up in the libcuda.so.1 already loaded in the process. Returns false (and
// leaves the table empty) when the process has not loaded it. Safe to call often: once loaded,
// one acquire load, inlined into every hook.
inline bool load_real_driver() {
  return detail::g_real_loaded.load(std::memory_order_acquire) || detail::load_real_driver_slow();
}

// A function of the libcuda.so.1 the process has loaded, by exact versioned name, or nullptr (no
// driver loaded, no such symbol): the one way the shim looks a driver function up (the table's
// load, the stream-work hooks).
void* real_driver_function(const char* name);

// The dlsym of the C library, bypassing the shim's own hook (RTLD_NEXT answers relative to the
// shim). Through cudapool_resolve_real_dlsym below.
void* real_dlsym(void* handle, const char* name);

}  // namespace cudapool::shim

extern "C" {
// glibc's own dlsym (dlsym@GLIBC_2.34, else @GLIBC_2.2.5, through dlvsym, which is not hooked), or
// nullptr: looked up on first use and kept in cudapool_real_dlsym_ptr, which the exported dlsym's
// assembly reads (interpose/dlsym_hook.cpp). Safe before anything is initialised, a sanitizer
// runtime included: uninstrumented, no function-local static, no TLS (interpose/dlsym_hook.cpp,
// "The early path").
__attribute__((visibility("hidden"))) void* cudapool_resolve_real_dlsym();
__attribute__((visibility("hidden"))) extern void* cudapool_real_dlsym_ptr;
}
