// SPDX-License-Identifier: Apache-2.0
// shim/interpose/hook_table.cpp: which real driver function each hook stands for. A lookup (dlsym
// on the driver's handle, cuGetProcAddress) is answered with a hook only when the pointer the
// driver returned IS one of the real functions below (looked up by exact versioned name): never by
// guessing from the requested name, whose version suffix the driver resolves itself. The hooked
// functions are the CUDAPOOL_DRIVER_HOOKED lines of driver/driver_functions.def.
#include <array>
#include <atomic>
#include <mutex>
#include <utility>

#include "shim/driver/export.h"
#include "shim/interpose/hooks.h"
#include "shim/interpose/stream_work.h"

namespace cudapool::shim {

namespace {

#define CUDAPOOL_DRIVER_CALLED(name, ret, params)
#define CUDAPOOL_DRIVER_HOOKED(name, ret, params) +1
constexpr int kHooks = 0
#include "shim/driver/driver_functions.def"
    ;
#undef CUDAPOOL_DRIVER_HOOKED

struct Pair {
  void* real;
  void* hook;
};
std::array<Pair, kHooks> g_pairs{};
std::atomic<bool> g_built{false};
std::mutex g_build_mutex;

bool build() {
  if (g_built.load(std::memory_order_acquire)) return true;
  if (!load_real_driver()) return false;
  std::lock_guard<std::mutex> lock(g_build_mutex);
  if (g_built.load(std::memory_order_relaxed)) return true;
  int i = 0;
#define CUDAPOOL_DRIVER_HOOKED(name, ret, params) \
  g_pairs[i++] = Pair{reinterpret_cast<void*>(real().name), reinterpret_cast<void*>(&::name)};
#include "shim/driver/driver_functions.def"
#undef CUDAPOOL_DRIVER_HOOKED
#undef CUDAPOOL_DRIVER_CALLED
  g_built.store(true, std::memory_order_release);
  return true;
}

}  // namespace

void* hook_for(void* real_function) {
  if (real_function == nullptr || !build()) return real_function;
  for (const Pair& p : g_pairs) {
    if (p.real == real_function) return p.hook;
  }
  if (void* hook = stream_work_hook_for(real_function)) return hook;
  return real_function;
}

}  // namespace cudapool::shim
