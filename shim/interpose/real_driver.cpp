// shim/interpose/real_driver.cpp: see real_driver.h.
#include "shim/interpose/real_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <initializer_list>
#include <mutex>

namespace cudapool::shim {

namespace {

using dlsym_fn = void* (*)(void*, const char*);

std::mutex g_load_mutex;

}  // namespace

void* find_real_dlsym() {
  // glibc 2.34+ has dlsym@@GLIBC_2.34 and the older dlsym@GLIBC_2.2.5; dlvsym is not hooked and
  // resolving it touches no CUDA.
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5"}) {
    if (void* p = dlvsym(RTLD_NEXT, "dlsym", version)) return p;
  }
  return nullptr;
}

void* real_dlsym(void* handle, const char* name) {
  static const dlsym_fn fn = reinterpret_cast<dlsym_fn>(find_real_dlsym());
  return fn != nullptr ? fn(handle, name) : nullptr;
}

void* real_driver_function(const char* name) {
  // Only a driver the process loaded itself: the shim never brings CUDA into a process.
  static std::atomic<void*> handle{nullptr};
  void* h = handle.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) return nullptr;
    handle.store(h, std::memory_order_release);  // a second dlopen of a loaded library: same handle
  }
  return real_dlsym(h, name);
}

namespace detail {

RealDriver g_real;
std::atomic<bool> g_real_loaded{false};

bool load_real_driver_slow() {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (g_real_loaded.load(std::memory_order_relaxed)) return true;
  if (real_driver_function("cuMemAlloc_v2") == nullptr) return false;
#define CUDAPOOL_DRIVER_CALLED(name, ret, params) \
  g_real.name = reinterpret_cast<ret(*) params>(real_driver_function(#name));
#define CUDAPOOL_DRIVER_HOOKED CUDAPOOL_DRIVER_CALLED
#include "shim/interpose/driver_functions.def"
#undef CUDAPOOL_DRIVER_HOOKED
#undef CUDAPOOL_DRIVER_CALLED
  if (g_real.cuMemAlloc_v2 == nullptr || g_real.cuMemFree_v2 == nullptr ||
      g_real.cuCtxGetCurrent == nullptr) {
    g_real = RealDriver{};
    return false;
  }
  g_real_loaded.store(true, std::memory_order_release);
  return true;
}

}  // namespace detail

}  // namespace cudapool::shim
