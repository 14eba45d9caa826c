// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_fake_api.cpp: fake_api, the fake driver's own contract checked
// without the shim (devices, alignment, the control API, contexts, VMM, IPC, pointer attributes,
// error names, counters). Not a shim test: registered only against the fake alone
// (fakecuda.selfcheck_fake_api[.lcuda]).
#include <cstring>

#include "scenarios.h"

namespace fakecuda_test {

// --- fake_api: the fake's own contract, without the shim ----------------------------------------

int fake_api(const Driver& d) {
  int version = 0;
  FC_OK(d, d.DriverGetVersion(&version));
  FC_CHECK(version == CUDA_VERSION, "driver version %d", version);
  int count = 0;
  FC_OK(d, d.DeviceGetCount(&count));
  FC_CHECK(count == d.device_count() && count >= 1, "device count %d", count);
  char name[64] = {};
  FC_OK(d, d.DeviceGetName(name, sizeof name, 0));
  size_t total = 0;
  FC_OK(d, d.DeviceTotalMem(&total, 0));
  FC_CHECK(total == d.capacity(0), "total memory %zu", total);
  int major = 0;
  FC_OK(d, d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  FC_EXPECT_RC(d, d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_MAX, 0),
               CUDA_ERROR_INVALID_VALUE);
  FC_EXPECT_RC(d, d.DeviceGetName(name, sizeof name, count), CUDA_ERROR_INVALID_DEVICE);
  say("%d devices, \"%s\", %zu bytes, compute capability %d", count, name, total, major);

  say("alignment: 512 B below 2 MiB, 2 MiB from 2 MiB on");
  CUdeviceptr small = alloc_ok(d, 1), big = alloc_ok(d, 2 * kMiB + 1);
  FC_CHECK(small % 512 == 0 && big % (2 * kMiB) == 0, "misaligned");
  FC_OK(d, d.MemFree(small));
  FC_OK(d, d.MemFree(big));

  FC_CHECK(d.place_next_alloc(3 * kMiB) == -1,
           "fakecuda_place_next_alloc took a misaligned address");
  say("fakecuda_fail_next_alloc(2): two OOMs, then success");
  d.fail_next_alloc(2);
  CUdeviceptr p = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  p = alloc_ok(d, 4096);

  say("memset/memcpy stay inside allocations");
  FC_OK(d, d.MemsetD8(p, 7, 4096));
  FC_EXPECT_RC(d, d.MemsetD8(p, 7, 4097), CUDA_ERROR_INVALID_VALUE);
  unsigned char buf[16] = {};
  FC_OK(d, d.MemcpyDtoH(buf, p + 4080, 16));
  FC_CHECK(buf[15] == 7, "memset lost");
  FC_EXPECT_RC(d, d.MemcpyDtoH(buf, p + 4090, 16), CUDA_ERROR_INVALID_VALUE);
  FC_EXPECT_RC(d, d.MemcpyHtoD(reinterpret_cast<CUdeviceptr>(buf), buf, 16),
               CUDA_ERROR_INVALID_VALUE);

  say("capacity: fakecuda_set_capacity bounds allocations and cuMemGetInfo_v2");
  size_t capacity = d.capacity(0);
  FC_CHECK(d.set_capacity(0, 16 * kMiB) == 0, "set_capacity failed");
  CUdeviceptr q = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&q, 17 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  size_t f = 0, t = 0;
  FC_OK(d, d.MemGetInfo(&f, &t));
  FC_CHECK(t == 16 * kMiB && f == 16 * kMiB - 4096, "info (%zu, %zu)", f, t);
  FC_CHECK(d.set_capacity(0, capacity) == 0, "restore failed");
  FC_OK(d, d.MemFree(p));

  say("context stack: pop leaves no context, push restores it");
  CUcontext c0 = current(d);
  CUcontext popped = nullptr;
  FC_OK(d, d.CtxPopCurrent(&popped));
  FC_CHECK(popped == c0, "popped another context");
  FC_CHECK(current(d) == nullptr, "a context is still current");
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_INVALID_CONTEXT);
  FC_EXPECT_RC(d, d.CtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
  FC_OK(d, d.CtxPushCurrent(c0));

  say("a created context on device 1 owns its allocations");
  CUcontext c = nullptr;
  FC_OK(d, d.CtxCreate(&c, nullptr, 0, 1));
  FC_CHECK(current(d) == c, "cuCtxCreate did not make it current");
  CUdevice dev = -1;
  FC_OK(d, d.CtxGetDevice(&dev));
  FC_CHECK(dev == 1, "device %d", dev);
  CUdeviceptr x = alloc_ok(d, kMiB);
  FC_CHECK(d.device_of(x) == 1, "allocated on device %d", d.device_of(x));
  FC_OK(d, d.CtxDestroy(c));
  FC_CHECK(!d.is_live(x), "destroying a context must free its memory");
  FC_CHECK(current(d) == c0, "the destroyed context is still current");
  FC_EXPECT_RC(d, d.CtxDestroy(c), CUDA_ERROR_INVALID_CONTEXT);

  say("cuDevicePrimaryCtxReset frees the primary context's memory");
  CUdeviceptr y = alloc_ok(d, kMiB);
  FC_OK(d, d.DevicePrimaryCtxReset(0));
  FC_CHECK(!d.is_live(y), "reset kept an allocation");
  y = alloc_ok(d, kMiB);
  FC_OK(d, d.MemFree(y));

  say("VMM: reserve, create, map, access, data survives remapping, release");
  const CUmemAllocationProp prop = device0_pinned();
  size_t g = 0;
  FC_OK(d, d.MemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  FC_CHECK(g == 2 * kMiB, "granularity %zu", g);
  CUdeviceptr va = 0;
  FC_OK(d, d.MemAddressReserve(&va, 4 * g, 0, 0, 0));
  FC_CHECK(va % g == 0, "reservation misaligned");
  size_t used0 = d.bytes_in_use(0);
  CUmemGenericAllocationHandle h = 0;
  FC_OK(d, d.MemCreate(&h, 2 * g, &prop, 0));
  FC_CHECK(d.bytes_in_use(0) == used0 + 2 * g, "cuMemCreate not charged");
  FC_OK(d, d.MemMap(va + g, 2 * g, 0, h, 0));
  FC_EXPECT_RC(d, d.MemsetD8(va + g, 1, 16), CUDA_ERROR_INVALID_VALUE);  // no access yet
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  FC_OK(d, d.MemSetAccess(va + g, 2 * g, &access, 1));
  stamp(va + g, 2 * g, 77);
  CUdeviceptr base = 0;
  size_t size = 0;
  FC_OK(d, d.MemGetAddressRange(&base, &size, va + g + 5));
  FC_CHECK(base == va + g && size == 2 * g, "mapping range");
  FC_EXPECT_RC(d, d.MemAddressFree(va, 4 * g), CUDA_ERROR_INVALID_VALUE);  // still mapped
  FC_OK(d, d.MemUnmap(va + g, 2 * g));
  FC_CHECK(!d.is_live(va + g), "unmapped range still live");
  FC_OK(d, d.MemMap(va, 2 * g, 0, h, 0));
  FC_OK(d, d.MemSetAccess(va, 2 * g, &access, 1));
  FC_CHECK(stamped(va, 2 * g, 77), "physical memory lost its data across unmap/map");
  FC_OK(d, d.MemRelease(h));
  FC_CHECK(d.bytes_in_use(0) == used0 + 2 * g, "released while mapped");
  FC_OK(d, d.MemUnmap(va, 2 * g));
  FC_CHECK(d.bytes_in_use(0) == used0, "not freed at the last unmap after release");
  FC_OK(d, d.MemAddressFree(va, 4 * g));

  say("IPC handles, pinned host memory, attributes of unknown pointers");
  CUipcMemHandle ipc;
  p = alloc_ok(d, kMiB);
  FC_OK(d, d.IpcGetMemHandle(&ipc, p));
  int local = 0;
  CUdeviceptr stack = reinterpret_cast<CUdeviceptr>(&local);
  FC_EXPECT_RC(d, d.IpcGetMemHandle(&ipc, stack), CUDA_ERROR_INVALID_VALUE);
  FC_OK(d, d.MemFree(p));
  void* hp = nullptr;
  FC_OK(d, d.MemAllocHost(&hp, 100));
  unsigned type = 0;
  FC_OK(d, d.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 reinterpret_cast<CUdeviceptr>(hp)));
  FC_CHECK(type == CU_MEMORYTYPE_HOST, "memory type %u", type);
  FC_OK(d, d.MemFreeHost(hp));
  FC_EXPECT_RC(d, d.MemFreeHost(hp), CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  CUcontext ctx = c0;
  int ordinal = 0;
  type = 9;
  void* data[] = {&ctx, &type, &ordinal};
  FC_OK(d, d.PointerGetAttributes(3, attrs, data, stack));
  FC_CHECK(ctx == nullptr && type == 0 && ordinal == -2, "defaults (%p, %u, %d)",
           static_cast<void*>(ctx), type, ordinal);
  FC_EXPECT_RC(d, d.MemAllocManaged(&p, 4096, 4), CUDA_ERROR_INVALID_VALUE);
  size_t pitch = 0;
  FC_EXPECT_RC(d, d.MemAllocPitch(&p, &pitch, 100, 2, 3), CUDA_ERROR_INVALID_VALUE);

  say("error names; counters and their reset");
  const char* text = nullptr;
  FC_OK(d, d.GetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text));
  FC_CHECK(std::strcmp(text, "CUDA_ERROR_OUT_OF_MEMORY") == 0, "name %s", text);
  FC_EXPECT_RC(d, d.GetErrorName(static_cast<CUresult>(12345), &text), CUDA_ERROR_INVALID_VALUE);
  FC_CHECK(d.calls("cuDeviceGetName") >= 2 && d.alloc_calls() > 0, "counters");
  d.reset_counters();
  FC_CHECK(d.calls("cuDeviceGetName") == 0 && d.alloc_calls() == 0 && d.sync_count() == 0, "reset");
  FC_CHECK(d.live_allocations(-1) == 0 && d.bytes_in_use(-1) == 0, "leaks: %zu allocations",
           d.live_allocations(-1));
  return 0;
}

}  // namespace fakecuda_test
