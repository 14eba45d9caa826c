// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/proc_address.cpp: cuGetProcAddress_v2 and the legacy 4-argument
// cuGetProcAddress, as the driver answers them: a base name ("cuMemAlloc") and the caller's CUDA
// version pick the newest versioned symbol introduced at or before that version
// (cuMemAlloc_v2 from 3020), CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM picks the _ptsz/_ptds
// variant where one exists, and unknown or suffixed names are not found. Works before cuInit.
// The returned addresses are the fake's own definitions (the library links with -Bsymbolic), never
// an interposer's. Not covered: the ~400 entry points the fake does not implement.
#include <cstring>

#include "exports.h"
#include "state.h"

using namespace fakecuda;

namespace {

struct Entry {
  const char* name;  // the base name callers ask for
  int version;       // the CUDA version that introduced this symbol
  void* fn;          // the symbol
  void* per_thread;  // its _ptsz/_ptds variant, or null
};

template <typename F>
void* fn(F* f) {
  return reinterpret_cast<void*>(f);
}

constexpr int kPerThreadVersion = 7000;  // per-thread default stream variants appeared in 7.0

// A function-local table: no dynamic initialization order to depend on when an interposer asks
// from its constructor.
const Entry* entries(size_t* count) {
  static const Entry kEntries[] = {
      {"cuInit", 2000, fn(&cuInit), nullptr},
      {"cuDriverGetVersion", 2020, fn(&cuDriverGetVersion), nullptr},
      {"cuGetProcAddress", 11030, fn(&cuGetProcAddress), nullptr},
      {"cuGetProcAddress", 12000, fn(&cuGetProcAddress_v2), nullptr},
      {"cuGetErrorString", 6000, fn(&cuGetErrorString), nullptr},
      {"cuGetErrorName", 6000, fn(&cuGetErrorName), nullptr},
      {"cuDeviceGet", 2000, fn(&cuDeviceGet), nullptr},
      {"cuDeviceGetCount", 2000, fn(&cuDeviceGetCount), nullptr},
      {"cuDeviceGetName", 2000, fn(&cuDeviceGetName), nullptr},
      {"cuDeviceTotalMem", 3020, fn(&cuDeviceTotalMem_v2), nullptr},
      {"cuDeviceGetAttribute", 2000, fn(&cuDeviceGetAttribute), nullptr},
      {"cuDevicePrimaryCtxRetain", 7000, fn(&cuDevicePrimaryCtxRetain), nullptr},
      {"cuDevicePrimaryCtxRelease", 7000, fn(&cuDevicePrimaryCtxRelease), nullptr},
      {"cuDevicePrimaryCtxRelease", 11000, fn(&cuDevicePrimaryCtxRelease_v2), nullptr},
      {"cuDevicePrimaryCtxReset", 7000, fn(&cuDevicePrimaryCtxReset), nullptr},
      {"cuDevicePrimaryCtxReset", 11000, fn(&cuDevicePrimaryCtxReset_v2), nullptr},
      {"cuDevicePrimaryCtxGetState", 7000, fn(&cuDevicePrimaryCtxGetState), nullptr},
      {"cuCtxGetCurrent", 4000, fn(&cuCtxGetCurrent), nullptr},
      {"cuCtxSetCurrent", 4000, fn(&cuCtxSetCurrent), nullptr},
      {"cuCtxGetDevice", 2000, fn(&cuCtxGetDevice), nullptr},
      {"cuCtxGetId", 12000, fn(&cuCtxGetId), nullptr},
      {"cuCtxPushCurrent", 2000, fn(&cuCtxPushCurrent), nullptr},
      {"cuCtxPushCurrent", 4000, fn(&cuCtxPushCurrent_v2), nullptr},
      {"cuCtxPopCurrent", 2000, fn(&cuCtxPopCurrent), nullptr},
      {"cuCtxPopCurrent", 4000, fn(&cuCtxPopCurrent_v2), nullptr},
      {"cuCtxSynchronize", 2000, fn(&cuCtxSynchronize), nullptr},
      {"cuCtxCreate", 3020, fn(&cuCtxCreate_v2), nullptr},
      {"cuCtxCreate", 11040, fn(&cuCtxCreate_v3), nullptr},
      {"cuCtxCreate", 12050, fn(&cuCtxCreate_v4), nullptr},
      {"cuCtxDestroy", 2000, fn(&cuCtxDestroy), nullptr},
      {"cuCtxDestroy", 4000, fn(&cuCtxDestroy_v2), nullptr},
      {"cuMemAlloc", 3020, fn(&cuMemAlloc_v2), nullptr},
      {"cuMemFree", 3020, fn(&cuMemFree_v2), nullptr},
      {"cuMemGetInfo", 3020, fn(&cuMemGetInfo_v2), nullptr},
      {"cuMemGetAddressRange", 3020, fn(&cuMemGetAddressRange_v2), nullptr},
      {"cuMemAllocPitch", 3020, fn(&cuMemAllocPitch_v2), nullptr},
      {"cuMemAllocManaged", 6000, fn(&cuMemAllocManaged), nullptr},
      {"cuMemAllocHost", 3020, fn(&cuMemAllocHost_v2), nullptr},
      {"cuMemHostAlloc", 2020, fn(&cuMemHostAlloc), nullptr},
      {"cuMemFreeHost", 2000, fn(&cuMemFreeHost), nullptr},
      {"cuMemAllocAsync", 11020, fn(&cuMemAllocAsync), fn(&cuMemAllocAsync_ptsz)},
      {"cuMemFreeAsync", 11020, fn(&cuMemFreeAsync), fn(&cuMemFreeAsync_ptsz)},
      {"cuMemAllocFromPoolAsync", 11020, fn(&cuMemAllocFromPoolAsync),
       fn(&cuMemAllocFromPoolAsync_ptsz)},
      {"cuPointerGetAttribute", 4000, fn(&cuPointerGetAttribute), nullptr},
      {"cuPointerGetAttributes", 7000, fn(&cuPointerGetAttributes), nullptr},
      {"cuMemsetD8", 3020, fn(&cuMemsetD8_v2), fn(&cuMemsetD8_v2_ptds)},
      {"cuMemsetD8Async", 3020, fn(&cuMemsetD8Async), fn(&cuMemsetD8Async_ptsz)},
      {"cuMemcpyHtoD", 3020, fn(&cuMemcpyHtoD_v2), fn(&cuMemcpyHtoD_v2_ptds)},
      {"cuMemcpyDtoH", 3020, fn(&cuMemcpyDtoH_v2), fn(&cuMemcpyDtoH_v2_ptds)},
      {"cuIpcGetMemHandle", 4010, fn(&cuIpcGetMemHandle), nullptr},
      {"cuMemAddressReserve", 10020, fn(&cuMemAddressReserve), nullptr},
      {"cuMemAddressFree", 10020, fn(&cuMemAddressFree), nullptr},
      {"cuMemCreate", 10020, fn(&cuMemCreate), nullptr},
      {"cuMemRelease", 10020, fn(&cuMemRelease), nullptr},
      {"cuMemMap", 10020, fn(&cuMemMap), nullptr},
      {"cuMemUnmap", 10020, fn(&cuMemUnmap), nullptr},
      {"cuMemSetAccess", 10020, fn(&cuMemSetAccess), nullptr},
      {"cuMemGetAllocationGranularity", 10020, fn(&cuMemGetAllocationGranularity), nullptr},
      {"cuStreamCreate", 2000, fn(&cuStreamCreate), nullptr},
      {"cuStreamCreateWithPriority", 5050, fn(&cuStreamCreateWithPriority), nullptr},
      {"cuStreamDestroy", 2000, fn(&cuStreamDestroy), nullptr},
      {"cuStreamDestroy", 4000, fn(&cuStreamDestroy_v2), nullptr},
      {"cuStreamSynchronize", 2000, fn(&cuStreamSynchronize), fn(&cuStreamSynchronize_ptsz)},
      {"cuStreamQuery", 2000, fn(&cuStreamQuery), fn(&cuStreamQuery_ptsz)},
      {"cuStreamGetFlags", 5050, fn(&cuStreamGetFlags), fn(&cuStreamGetFlags_ptsz)},
      {"cuStreamIsCapturing", 10000, fn(&cuStreamIsCapturing), fn(&cuStreamIsCapturing_ptsz)},
      {"cuStreamBeginCapture", 10010, fn(&cuStreamBeginCapture_v2),
       fn(&cuStreamBeginCapture_v2_ptsz)},
      {"cuStreamBeginCaptureToGraph", 12030, fn(&cuStreamBeginCaptureToGraph),
       fn(&cuStreamBeginCaptureToGraph_ptsz)},
      {"cuStreamEndCapture", 10000, fn(&cuStreamEndCapture), fn(&cuStreamEndCapture_ptsz)},
      {"cuThreadExchangeStreamCaptureMode", 10010, fn(&cuThreadExchangeStreamCaptureMode), nullptr},
      {"cuGraphCreate", 10000, fn(&cuGraphCreate), nullptr},
      {"cuGraphDestroy", 10000, fn(&cuGraphDestroy), nullptr},
      {"cuStreamWaitEvent", 3020, fn(&cuStreamWaitEvent), fn(&cuStreamWaitEvent_ptsz)},
      {"cuEventCreate", 2000, fn(&cuEventCreate), nullptr},
      {"cuEventRecord", 2000, fn(&cuEventRecord), fn(&cuEventRecord_ptsz)},
      {"cuEventQuery", 2000, fn(&cuEventQuery), nullptr},
      {"cuEventSynchronize", 2000, fn(&cuEventSynchronize), nullptr},
      {"cuEventDestroy", 2000, fn(&cuEventDestroy), nullptr},
      {"cuEventDestroy", 4000, fn(&cuEventDestroy_v2), nullptr},
  };
  *count = sizeof(kEntries) / sizeof(kEntries[0]);
  return kEntries;
}

CUresult lookup(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const unsigned long long known =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const Entry* best = nullptr;
  bool named = false;
  size_t count = 0;
  const Entry* table = entries(&count);
  for (size_t i = 0; i < count; ++i) {
    const Entry& e = table[i];
    if (std::strcmp(e.name, symbol) != 0) continue;
    named = true;
    if (e.version <= cudaVersion && (best == nullptr || e.version > best->version)) best = &e;
  }
  if (best == nullptr) {
    if (status != nullptr) {
      *status =
          named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
  }
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0 &&
                    best->per_thread != nullptr && cudaVersion >= kPerThreadVersion;
  *pfn = per_thread ? best->per_thread : best->fn;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  FAKECUDA_ENTRY("cuGetProcAddress_v2");
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  FAKECUDA_ENTRY("cuGetProcAddress");
  return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
