// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/cudart_like.cpp: reaches the driver exactly as the CUDA runtime does:
// dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), then every entry point through it (some
// with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, some at two versions, one empty name), all
// before cuInit; then cuInit(0), the primary context, and a scenario (scenarios.cpp). The fake's
// control functions come from dlsym on the same handle. Not linked to the fake.
// Usage: cudart_like <scenario> shim|fake
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "scenarios.h"

namespace {

using fakecuda_test::Driver;
using fakecuda_test::fail;
using GetProcAddress = decltype(&::cuGetProcAddress_v2);

GetProcAddress gpa = nullptr;
void* handle = nullptr;

void* ask(const char* name, int version, cuuint64_t flags) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult rc = gpa(name, &fn, version, flags, &status);
  if (rc != CUDA_SUCCESS || fn == nullptr || status != CU_GET_PROC_ADDRESS_SUCCESS) {
    fail(__FILE__, __LINE__,
         std::string("cuGetProcAddress_v2(\"") + name + "\", " + std::to_string(version) +
             ", flags " + std::to_string(flags) + ") -> rc " + std::to_string(rc) + ", status " +
             std::to_string(status));
  }
  return fn;
}

template <typename F>
void get(F& out, const char* name, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  out = reinterpret_cast<F>(ask(name, CUDA_VERSION, flags));
}

template <typename F>
void control(F& out, const char* name) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (out == nullptr) fail(__FILE__, __LINE__, std::string("dlsym(libcuda.so.1, ") + name + ")");
}

void expect_missing(const char* name, int version, CUdriverProcAddressQueryResult want) {
  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult rc = gpa(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (rc != CUDA_ERROR_NOT_FOUND || fn != nullptr || status != want) {
    fail(__FILE__, __LINE__,
         std::string("cuGetProcAddress_v2(\"") + name + "\", " + std::to_string(version) +
             ") -> rc " + std::to_string(rc) + ", status " + std::to_string(status) +
             ", expected CUDA_ERROR_NOT_FOUND, status " + std::to_string(want) + ", null");
  }
}

// In fake mode the answers must be the fake's own exported symbols.
void expect_symbol(void* fn, const char* exported) {
  void* want = dlsym(handle, exported);
  if (want == nullptr || fn != want) {
    fail(__FILE__, __LINE__, std::string("cuGetProcAddress answer is not ") + exported);
  }
}

void check_proc_address(bool fake) {
  std::printf(
      "  cuGetProcAddress_v2 before cuInit: empty and unknown names, NULL status, "
      "two versions, per-thread variants\n");
  expect_missing("", CUDA_VERSION, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  expect_missing("cuNoSuchFunction", CUDA_VERSION, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  void* fn = nullptr;
  if (gpa("cuMemAlloc", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) != CUDA_SUCCESS ||
      fn == nullptr) {
    fail(__FILE__, __LINE__, "cuGetProcAddress_v2 with a NULL symbolStatus failed");
  }
  void* alloc_new = ask("cuMemAlloc", CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
  void* alloc_old = ask("cuMemAlloc", 3020, CU_GET_PROC_ADDRESS_DEFAULT);
  void* destroy_new = ask("cuStreamDestroy", CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
  void* destroy_old = ask("cuStreamDestroy", 3020, CU_GET_PROC_ADDRESS_DEFAULT);
  void* async_legacy = ask("cuMemAllocAsync", CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
  void* async_ptds =
      ask("cuMemAllocAsync", CUDA_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  void* memset_ptds =
      ask("cuMemsetD8", CUDA_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  void* release_new = ask("cuDevicePrimaryCtxRelease", CUDA_VERSION, 0);
  void* ctx_destroy_new = ask("cuCtxDestroy", CUDA_VERSION, 0);
  void* gpa_self = ask("cuGetProcAddress", CUDA_VERSION, 0);
  (void)destroy_old;
  auto legacy = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t)>(
      dlsym(handle, "cuGetProcAddress"));
  if (legacy == nullptr) fail(__FILE__, __LINE__, "no legacy cuGetProcAddress");
  void* via_legacy = nullptr;
  if (legacy("cuMemAlloc", &via_legacy, CUDA_VERSION, 0) != CUDA_SUCCESS || via_legacy == nullptr) {
    fail(__FILE__, __LINE__, "legacy 4-argument cuGetProcAddress failed");
  }
  if (!fake) return;
  expect_symbol(alloc_new, "cuMemAlloc_v2");
  expect_symbol(alloc_old, "cuMemAlloc_v2");
  expect_symbol(via_legacy, "cuMemAlloc_v2");
  expect_symbol(destroy_new, "cuStreamDestroy_v2");
  expect_symbol(destroy_old, "cuStreamDestroy");
  expect_symbol(async_legacy, "cuMemAllocAsync");
  expect_symbol(async_ptds, "cuMemAllocAsync_ptsz");
  expect_symbol(memset_ptds, "cuMemsetD8_v2_ptds");
  expect_symbol(release_new, "cuDevicePrimaryCtxRelease_v2");
  expect_symbol(ctx_destroy_new, "cuCtxDestroy_v2");
  expect_symbol(gpa_self, "cuGetProcAddress_v2");
  expect_symbol(ask("cuCtxCreate", CUDA_VERSION, 0), "cuCtxCreate_v4");
  expect_symbol(ask("cuCtxCreate", 11040, 0), "cuCtxCreate_v3");
  expect_symbol(ask("cuMemcpyHtoD", CUDA_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
                "cuMemcpyHtoD_v2_ptds");
  expect_symbol(ask("cuMemcpyHtoD", 3020, CU_GET_PROC_ADDRESS_LEGACY_STREAM), "cuMemcpyHtoD_v2");
  expect_missing("cuMemAlloc", 3000, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  expect_missing("cuMemAlloc_v2", CUDA_VERSION, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("cudart_like %s %s\n", argc > 1 ? argv[1] : "?", argc > 2 ? argv[2] : "?");
  handle = dlopen("libcuda.so.1", RTLD_NOW);
  if (handle == nullptr) {
    std::fprintf(stderr, "FAIL: dlopen(libcuda.so.1): %s\n", dlerror());
    return 1;
  }
  gpa = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
  if (gpa == nullptr) {
    std::fprintf(stderr, "FAIL: dlsym(cuGetProcAddress_v2): %s\n", dlerror());
    return 1;
  }
  bool fake = argc > 2 && std::strcmp(argv[2], "fake") == 0;
  check_proc_address(fake);

  const cuuint64_t kPtds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  Driver d;
  get(d.Init, "cuInit");
  get(d.DriverGetVersion, "cuDriverGetVersion");
  get(d.GetErrorName, "cuGetErrorName");
  get(d.DeviceGet, "cuDeviceGet");
  get(d.DeviceGetCount, "cuDeviceGetCount");
  get(d.DeviceGetName, "cuDeviceGetName");
  get(d.DeviceTotalMem, "cuDeviceTotalMem");
  get(d.DeviceGetAttribute, "cuDeviceGetAttribute");
  get(d.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
  get(d.DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset");
  get(d.CtxGetCurrent, "cuCtxGetCurrent");
  get(d.CtxSetCurrent, "cuCtxSetCurrent");
  get(d.CtxGetDevice, "cuCtxGetDevice");
  get(d.CtxPushCurrent, "cuCtxPushCurrent");
  get(d.CtxPopCurrent, "cuCtxPopCurrent");
  get(d.CtxSynchronize, "cuCtxSynchronize");
  get(d.CtxCreate, "cuCtxCreate");
  get(d.CtxDestroy, "cuCtxDestroy");
  get(d.MemAlloc, "cuMemAlloc");
  get(d.MemFree, "cuMemFree");
  get(d.MemGetInfo, "cuMemGetInfo");
  get(d.MemGetAddressRange, "cuMemGetAddressRange");
  get(d.PointerGetAttribute, "cuPointerGetAttribute");
  get(d.PointerGetAttributes, "cuPointerGetAttributes");
  get(d.MemsetD8, "cuMemsetD8", kPtds);
  get(d.MemsetD8Async, "cuMemsetD8Async");
  get(d.MemcpyHtoD, "cuMemcpyHtoD", kPtds);
  get(d.MemcpyDtoH, "cuMemcpyDtoH", kPtds);
  get(d.StreamCreate, "cuStreamCreate");
  get(d.StreamCreateWithPriority, "cuStreamCreateWithPriority");
  get(d.StreamDestroy, "cuStreamDestroy");
  get(d.StreamSynchronize, "cuStreamSynchronize", kPtds);
  get(d.StreamQuery, "cuStreamQuery", kPtds);
  get(d.StreamGetFlags, "cuStreamGetFlags");
  get(d.StreamIsCapturing, "cuStreamIsCapturing");
  get(d.StreamBeginCapture, "cuStreamBeginCapture");
  get(d.StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph");
  get(d.StreamEndCapture, "cuStreamEndCapture");
  get(d.ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
  get(d.GraphCreate, "cuGraphCreate");
  get(d.GraphDestroy, "cuGraphDestroy");
  get(d.StreamWaitEvent, "cuStreamWaitEvent");
  get(d.EventCreate, "cuEventCreate");
  get(d.EventRecord, "cuEventRecord", kPtds);
  get(d.EventQuery, "cuEventQuery");
  get(d.EventSynchronize, "cuEventSynchronize");
  get(d.EventDestroy, "cuEventDestroy");
  get(d.MemAddressReserve, "cuMemAddressReserve");
  get(d.MemAddressFree, "cuMemAddressFree");
  get(d.MemCreate, "cuMemCreate");
  get(d.MemRelease, "cuMemRelease");
  get(d.MemMap, "cuMemMap");
  get(d.MemUnmap, "cuMemUnmap");
  get(d.MemSetAccess, "cuMemSetAccess");
  get(d.MemGetAllocationGranularity, "cuMemGetAllocationGranularity");
  get(d.IpcGetMemHandle, "cuIpcGetMemHandle");
  get(d.MemAllocAsync, "cuMemAllocAsync", kPtds);
  get(d.MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", kPtds);
  get(d.MemFreeAsync, "cuMemFreeAsync", kPtds);
  get(d.MemAllocManaged, "cuMemAllocManaged");
  get(d.MemAllocPitch, "cuMemAllocPitch");
  get(d.MemAllocHost, "cuMemAllocHost");
  get(d.MemFreeHost, "cuMemFreeHost");
  get(d.MemHostAlloc, "cuMemHostAlloc");
  d.alloc_async_name = "cuMemAllocAsync_ptsz";
  d.alloc_from_pool_name = "cuMemAllocFromPoolAsync_ptsz";
  d.free_async_name = "cuMemFreeAsync_ptsz";

  control(d.alloc_calls, "fakecuda_alloc_calls");
  control(d.free_calls, "fakecuda_free_calls");
  control(d.calls, "fakecuda_calls");
  control(d.reset_counters, "fakecuda_reset_counters");
  control(d.bytes_in_use, "fakecuda_bytes_in_use");
  control(d.live_allocations, "fakecuda_live_allocations");
  control(d.is_live, "fakecuda_is_live");
  control(d.device_of, "fakecuda_device_of");
  control(d.device_count, "fakecuda_device_count");
  control(d.capacity, "fakecuda_capacity");
  control(d.set_capacity, "fakecuda_set_capacity");
  control(d.fail_next_alloc, "fakecuda_fail_next_alloc");
  control(d.hold_stream, "fakecuda_hold_stream");
  control(d.sync_count, "fakecuda_sync_count");
  control(d.reset_primary_unseen, "fakecuda_reset_primary_unseen");
  control(d.place_next_alloc, "fakecuda_place_next_alloc");

  return fakecuda_test::program_main(d, argc, argv, "cudart_like");
}
