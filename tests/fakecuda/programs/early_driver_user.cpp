// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/early_driver_user.cpp: a shared library that looks up a driver function
// from its constructor, as cuBLASLt does (dlopen("libcuda.so.1") + dlsym). The dynamic loader runs
// this constructor before those of the preloaded shim (the shim is not among its dependencies), so
// the lookup reaches the shim's dlsym, and initializes the shim, before the shim's own static
// initializers ran. Linked into cudart_like_early; early_init.sh checks that the shim's settings
// survive. Not a driver: it only makes the lookup.
#include <dlfcn.h>

namespace {

__attribute__((constructor)) void look_up_driver_early() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (driver != nullptr) (void)dlsym(driver, "cuInit");
}

}  // namespace
