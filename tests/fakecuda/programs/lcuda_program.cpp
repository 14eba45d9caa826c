// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/lcuda_program.cpp: a program linked with -lcuda (against the fake), which
// calls the driver's exported names (cuMemAlloc_v2, ...) directly, as programs that use the driver
// API do; an LD_PRELOAD library that exports the same names interposes on them. Runs a scenario
// from scenarios.cpp. Not a dlopen user: see cudart_like.cpp.
// Usage: lcuda_program <scenario> shim|fake
#include "scenarios.h"

int main(int argc, char** argv) {
  std::printf("lcuda_program %s %s\n", argc > 1 ? argv[1] : "?", argc > 2 ? argv[2] : "?");
  int version = 0;
  if (cuDriverGetVersion(&version) != CUDA_SUCCESS) {  // a direct call through the PLT
    std::fprintf(stderr, "FAIL: cuDriverGetVersion\n");
    return 1;
  }

  fakecuda_test::Driver d;
  d.Init = &cuInit;
  d.DriverGetVersion = &cuDriverGetVersion;
  d.GetErrorName = &cuGetErrorName;
  d.DeviceGet = &cuDeviceGet;
  d.DeviceGetCount = &cuDeviceGetCount;
  d.DeviceGetName = &cuDeviceGetName;
  d.DeviceTotalMem = &cuDeviceTotalMem;
  d.DeviceGetAttribute = &cuDeviceGetAttribute;
  d.DevicePrimaryCtxRetain = &cuDevicePrimaryCtxRetain;
  d.DevicePrimaryCtxRelease = &cuDevicePrimaryCtxRelease;
  d.DevicePrimaryCtxReset = &cuDevicePrimaryCtxReset;
  d.CtxGetCurrent = &cuCtxGetCurrent;
  d.CtxSetCurrent = &cuCtxSetCurrent;
  d.CtxGetDevice = &cuCtxGetDevice;
  d.CtxPushCurrent = &cuCtxPushCurrent;
  d.CtxPopCurrent = &cuCtxPopCurrent;
  d.CtxSynchronize = &cuCtxSynchronize;
  d.CtxCreate = &cuCtxCreate;
  d.CtxDestroy = &cuCtxDestroy;
  d.MemAlloc = &cuMemAlloc;
  d.MemFree = &cuMemFree;
  d.MemGetInfo = &cuMemGetInfo;
  d.MemGetAddressRange = &cuMemGetAddressRange;
  d.PointerGetAttribute = &cuPointerGetAttribute;
  d.PointerGetAttributes = &cuPointerGetAttributes;
  d.MemsetD8 = &cuMemsetD8;
  d.MemsetD8Async = &cuMemsetD8Async;
  d.MemcpyHtoD = &cuMemcpyHtoD;
  d.MemcpyDtoH = &cuMemcpyDtoH;
  d.StreamCreate = &cuStreamCreate;
  d.StreamCreateWithPriority = &cuStreamCreateWithPriority;
  d.StreamDestroy = &cuStreamDestroy;
  d.StreamSynchronize = &cuStreamSynchronize;
  d.StreamQuery = &cuStreamQuery;
  d.StreamGetFlags = &cuStreamGetFlags;
  d.StreamIsCapturing = &cuStreamIsCapturing;
  d.StreamBeginCapture = &cuStreamBeginCapture;
  d.StreamBeginCaptureToGraph = &cuStreamBeginCaptureToGraph;
  d.StreamEndCapture = &cuStreamEndCapture;
  d.ThreadExchangeStreamCaptureMode = &cuThreadExchangeStreamCaptureMode;
  d.GraphCreate = &cuGraphCreate;
  d.GraphDestroy = &cuGraphDestroy;
  d.StreamWaitEvent = &cuStreamWaitEvent;
  d.EventCreate = &cuEventCreate;
  d.EventRecord = &cuEventRecord;
  d.EventQuery = &cuEventQuery;
  d.EventSynchronize = &cuEventSynchronize;
  d.EventDestroy = &cuEventDestroy;
  d.MemAddressReserve = &cuMemAddressReserve;
  d.MemAddressFree = &cuMemAddressFree;
  d.MemCreate = &cuMemCreate;
  d.MemRelease = &cuMemRelease;
  d.MemMap = &cuMemMap;
  d.MemUnmap = &cuMemUnmap;
  d.MemSetAccess = &cuMemSetAccess;
  d.MemGetAllocationGranularity = &cuMemGetAllocationGranularity;
  d.IpcGetMemHandle = &cuIpcGetMemHandle;
  d.MemAllocAsync = &cuMemAllocAsync;
  d.MemAllocFromPoolAsync = &cuMemAllocFromPoolAsync;
  d.MemFreeAsync = &cuMemFreeAsync;
  d.MemAllocManaged = &cuMemAllocManaged;
  d.MemAllocPitch = &cuMemAllocPitch;
  d.MemAllocHost = &cuMemAllocHost;
  d.MemFreeHost = &cuMemFreeHost;
  d.MemHostAlloc = &cuMemHostAlloc;

  d.alloc_calls = &fakecuda_alloc_calls;
  d.free_calls = &fakecuda_free_calls;
  d.calls = &fakecuda_calls;
  d.reset_counters = &fakecuda_reset_counters;
  d.bytes_in_use = &fakecuda_bytes_in_use;
  d.live_allocations = &fakecuda_live_allocations;
  d.is_live = &fakecuda_is_live;
  d.device_of = &fakecuda_device_of;
  d.device_count = &fakecuda_device_count;
  d.capacity = &fakecuda_capacity;
  d.set_capacity = &fakecuda_set_capacity;
  d.fail_next_alloc = &fakecuda_fail_next_alloc;
  d.hold_stream = &fakecuda_hold_stream;
  d.sync_count = &fakecuda_sync_count;
  d.reset_primary_unseen = &fakecuda_reset_primary_unseen;
  d.place_next_alloc = &fakecuda_place_next_alloc;

  return fakecuda_test::program_main(d, argc, argv, "lcuda_program");
}
