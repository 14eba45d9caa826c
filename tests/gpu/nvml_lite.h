// SPDX-License-Identifier: Apache-2.0
// tests/gpu/nvml_lite.h: device memory in use as NVML sees it (the whole device, every process),
// read through dlopen so that nothing links against NVML and no nvml.h is needed. The shim does not
// interpose NVML, so this shows what the pool really holds from the driver, whatever cuMemGetInfo
// reports under the shim. Header-only; used by runtime-API and driver-API programs alike.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace nvml_lite {

struct Memory {  // nvmlMemory_t (v1): total, free, used in bytes
  unsigned long long total, free, used;
};
using InitFn = int (*)();
using ByPciFn = int (*)(const char*, void**);
using ByIndexFn = int (*)(unsigned, void**);
using CountFn = int (*)(unsigned*);
using MemFn = int (*)(void*, Memory*);

struct State {
  bool tried = false;
  void* device = nullptr;
  MemFn mem = nullptr;
  char why[160] = "not initialised";
};

inline State& state() {
  static State s;
  return s;
}

// Opens NVML once and finds the device with this PCI bus id ("0000:3b:00.0"); falls back to the
// only device when there is exactly one. Returns false (see why()) when NVML is not usable.
inline bool open(const char* pci_bus_id) {
  State& s = state();
  if (s.tried) return s.device != nullptr;
  s.tried = true;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(s.why, sizeof s.why, "dlopen libnvidia-ml.so.1 failed");
    return false;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto by_pci = reinterpret_cast<ByPciFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto by_index = reinterpret_cast<ByIndexFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  s.mem = reinterpret_cast<MemFn>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  if (!init || !s.mem) {
    snprintf(s.why, sizeof s.why, "NVML symbols missing");
    return false;
  }
  int rc = init();
  if (rc != 0) {
    snprintf(s.why, sizeof s.why, "nvmlInit_v2 returned %d", rc);
    return false;
  }
  void* dev = nullptr;
  if (by_pci && pci_bus_id && by_pci(pci_bus_id, &dev) == 0 && dev) {
    s.device = dev;
    return true;
  }
  unsigned n = 0;
  if (count && by_index && count(&n) == 0 && n == 1 && by_index(0, &dev) == 0 && dev) {
    s.device = dev;
    return true;
  }
  snprintf(s.why, sizeof s.why, "no NVML device for PCI bus id %s", pci_bus_id ? pci_bus_id : "?");
  return false;
}

// Bytes in use on the device (NVML "used"), or -1 when NVML is not usable.
inline long long used_bytes() {
  State& s = state();
  if (!s.device) return -1;
  Memory m;
  memset(&m, 0, sizeof m);
  if (s.mem(s.device, &m) != 0) return -1;
  return static_cast<long long>(m.used);
}

inline const char* why() {
  return state().why;
}

}  // namespace nvml_lite
