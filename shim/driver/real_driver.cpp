// SPDX-License-Identifier: Apache-2.0
// shim/driver/real_driver.cpp: see real_driver.h.
#include "shim/driver/real_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

// No sanitizer instrumentation in a function, whatever the build flags: the early path of the
// exported dlsym runs before a preloaded sanitizer runtime has initialised itself
// (interpose/dlsym_hook.cpp). clang's disable_sanitizer_instrumentation also drops TSan's function
// entry and exit calls, which no_sanitize("thread") keeps there; GCC's no_sanitize leaves the
// function bare.
#if defined(__has_attribute)
#if __has_attribute(disable_sanitizer_instrumentation)
#define CUDAPOOL_UNINSTRUMENTED \
  __attribute__((disable_sanitizer_instrumentation, no_sanitize("address", "undefined", "thread")))
#endif
#endif
#ifndef CUDAPOOL_UNINSTRUMENTED
#define CUDAPOOL_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))
#endif

extern "C" {

// Zero-initialized (.bss): valid before any constructor. Written only by the resolver below,
// read by it and by the exported dlsym's assembly (an aligned pointer load, atomic on x86-64).
__attribute__((visibility("hidden"), used)) void* cudapool_real_dlsym_ptr = nullptr;

// The __atomic builtins, not std::atomic: its member functions are out-of-line (and instrumented)
// calls in a build without optimization. Two threads resolving at once store the same pointer.
__attribute__((visibility("hidden"), used, noinline)) CUDAPOOL_UNINSTRUMENTED void*
cudapool_resolve_real_dlsym() {
  void* fn = __atomic_load_n(&cudapool_real_dlsym_ptr, __ATOMIC_ACQUIRE);
  if (fn != nullptr) return fn;
  // glibc 2.34+ has dlsym@@GLIBC_2.34 and the older dlsym@GLIBC_2.2.5; dlvsym is not hooked (by
  // the shim or by a sanitizer runtime) and resolving it touches no CUDA. RTLD_NEXT: the dlsym
  // after the shim in the lookup order.
  fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (fn == nullptr) fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (fn != nullptr) __atomic_store_n(&cudapool_real_dlsym_ptr, fn, __ATOMIC_RELEASE);
  return fn;
}

}  // extern "C"

namespace cudapool::shim {

namespace {

using dlsym_fn = void* (*)(void*, const char*);

std::mutex g_load_mutex;

}  // namespace

void* real_dlsym(void* handle, const char* name) {
  const auto fn = reinterpret_cast<dlsym_fn>(cudapool_resolve_real_dlsym());
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
#include "shim/driver/driver_functions.def"
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
