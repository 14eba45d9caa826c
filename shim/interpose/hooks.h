// SPDX-License-Identifier: Apache-2.0
// shim/interpose/hooks.h: what every hook starts with. pooling(): the shim is active on this call
// (initialized, not disabled, not re-entered, driver found). CUDAPOOL_PASS: the untouched call to
// the real function, or CUDA_ERROR_NOT_INITIALIZED when the process has no driver loaded.
#pragma once

#include "shim/driver/export.h"
#include "shim/driver/real_driver.h"
#include "shim/support/guard.h"
#include "shim/support/mode.h"

// The hooks of driver/driver_functions.def, declared from it: each definition (hooks_*.cpp,
// proc_address.cpp) must match its line.
#define CUDAPOOL_DRIVER_CALLED(name, ret, params)
#define CUDAPOOL_DRIVER_HOOKED(name, ret, params) CUDAPOOL_EXPORT ret name params;
#include "shim/driver/driver_functions.def"
#undef CUDAPOOL_DRIVER_HOOKED
#undef CUDAPOOL_DRIVER_CALLED

namespace cudapool::shim {

inline bool pooling() {
  return !inside_shim() && mode() == Mode::kPooling && load_real_driver();
}

// Pointer to the hook that stands for a real driver function, or the pointer itself.
void* hook_for(void* real_function);

}  // namespace cudapool::shim

#define CUDAPOOL_PASS(name, ...)                                                    \
  (::cudapool::shim::load_real_driver() && ::cudapool::shim::real().name != nullptr \
       ? ::cudapool::shim::real().name(__VA_ARGS__)                                 \
       : CUDA_ERROR_NOT_INITIALIZED)
