// SPDX-License-Identifier: Apache-2.0
/* tests/cli/fake_nvml.c: a stand-in for libnvidia-ml.so.1 for the control client's tests
 * (tests/cli/control_live.sh; scripts/cudapool_analysis/nvml.py loads it through
 * CUDAPOOL_NVML_LIBRARY): the few NVML functions the client calls, with figures from the
 * environment, read at each call:
 *   FAKE_NVML_DEVICES  how many GPUs (default 2), named FAKE_NVML_NAME (default "Fake GPU"),
 *                      UUIDs GPU-fake-0, GPU-fake-1, ...
 *   FAKE_NVML_PROCS    "INDEX:PID:BYTES,..." the compute processes and their usedGpuMemory
 *   FAKE_NVML_STRIDE   24 (nvmlProcessInfo_v2_t) or 32 (with usedGpuCcProtectedMemory, as
 *                      drivers from R535 write it); default 24
 *   FAKE_NVML_INIT     a status for nvmlInit_v2 to return (default 0, NVML_SUCCESS)
 * Built by the test (cc -shared -fPIC); not a test itself, not a model of NVML beyond these. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void* nvmlDevice_t;

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

int nvmlInit_v2(void) { return env_int("FAKE_NVML_INIT", 0); }
int nvmlShutdown(void) { return 0; }

const char* nvmlErrorString(int r) { return r == 9 ? "Driver Not Loaded" : "Unknown Error"; }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = (unsigned)env_int("FAKE_NVML_DEVICES", 2);
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (index >= (unsigned)env_int("FAKE_NVML_DEVICES", 2)) return 2; /* INVALID_ARGUMENT */
  *device = (nvmlDevice_t)(unsigned long)(index + 1);
  return 0;
}

int nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  snprintf(uuid, length, "GPU-fake-%lu", (unsigned long)device - 1);
  return 0;
}

int nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  (void)device;
  const char* n = getenv("FAKE_NVML_NAME");
  snprintf(name, length, "%s", n ? n : "Fake GPU");
  return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                            void* infos) {
  unsigned long index = (unsigned long)device - 1;
  unsigned stride = (unsigned)env_int("FAKE_NVML_STRIDE", 24);
  const char* procs = getenv("FAKE_NVML_PROCS");
  unsigned n = 0, room = *count;
  unsigned char* out = infos;
  while (procs && *procs) {
    unsigned long dev = 0, pid = 0;
    unsigned long long bytes = 0;
    if (sscanf(procs, "%lu:%lu:%llu", &dev, &pid, &bytes) == 3 && dev == index) {
      if (n < room && out) {
        unsigned int p = (unsigned int)pid, none = 0xFFFFFFFFu;
        unsigned long long zero = 0;
        memcpy(out + n * stride, &p, 4);
        memcpy(out + n * stride + 4, &zero, 4);
        memcpy(out + n * stride + 8, &bytes, 8);
        memcpy(out + n * stride + 16, &none, 4);
        memcpy(out + n * stride + 20, &none, 4);
        if (stride == 32) memcpy(out + n * stride + 24, &zero, 8);
      }
      n++;
    }
    procs = strchr(procs, ',');
    if (procs) procs++;
  }
  *count = n;
  return n > room ? 7 /* INSUFFICIENT_SIZE */ : 0;
}
