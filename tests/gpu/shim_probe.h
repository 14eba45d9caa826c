// SPDX-License-Identifier: Apache-2.0
// tests/gpu/shim_probe.h: whether libcudapool is mapped into this process (LD_PRELOAD took
// effect), for the GPU test and benchmark programs. No CUDA here, so driver-API programs use it too.
#pragma once

#include <cstdio>
#include <cstring>

inline bool shim_loaded() {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "libcudapool")) {
      found = true;
      break;
    }
  }
  fclose(f);
  return found;
}
