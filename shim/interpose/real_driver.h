// shim/interpose/real_driver.h: the real driver's entry points, looked up once by exact versioned
// name in the libcuda.so.1 the process has loaded (never loaded by the shim itself). Every call the
// shim makes to CUDA goes through this table, so no internal call can land on one of the shim's own
// exported hooks. Not thread-unsafe: load() is idempotent and guarded.
#pragma once

#include <atomic>

#include "shim/interpose/cuda_api.h"

namespace cudapool::shim {

// X(symbol, function type): every real function the shim calls or hooks.
#define CUDAPOOL_REAL_FUNCTIONS(X)                                                                 \
  X(cuGetProcAddress_v2, cuGetProcAddress_v2_fn)                                                   \
  X(cuGetProcAddress, cuGetProcAddress_v1_fn)                                                      \
  X(cuDriverGetVersion, CUresult (*)(int*))                                                        \
  X(cuCtxGetCurrent, CUresult (*)(CUcontext*))                                                     \
  X(cuCtxGetDevice, CUresult (*)(CUdevice*))                                                       \
  X(cuCtxGetId, CUresult (*)(CUcontext, unsigned long long*))                                      \
  X(cuCtxPushCurrent_v2, CUresult (*)(CUcontext))                                                  \
  X(cuCtxPopCurrent_v2, CUresult (*)(CUcontext*))                                                  \
  X(cuCtxSynchronize, CUresult (*)())                                                              \
  X(cuDeviceTotalMem_v2, CUresult (*)(size_t*, CUdevice))                                          \
  X(cuMemAlloc_v2, CUresult (*)(CUdeviceptr*, size_t))                                             \
  X(cuMemFree_v2, CUresult (*)(CUdeviceptr))                                                       \
  X(cuMemGetInfo_v2, CUresult (*)(size_t*, size_t*))                                               \
  X(cuMemGetAddressRange_v2, CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr))                     \
  X(cuPointerGetAttribute, CUresult (*)(void*, CUpointer_attribute, CUdeviceptr))                  \
  X(cuPointerGetAttributes, CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr)) \
  X(cuIpcGetMemHandle, CUresult (*)(CUipcMemHandle*, CUdeviceptr))                                 \
  X(cuEventCreate, CUresult (*)(CUevent*, unsigned int))                                           \
  X(cuEventRecord, CUresult (*)(CUevent, CUstream))                                                \
  X(cuEventQuery, CUresult (*)(CUevent))                                                           \
  X(cuEventSynchronize, CUresult (*)(CUevent))                                                     \
  X(cuEventDestroy_v2, CUresult (*)(CUevent))                                                      \
  X(cuStreamWaitEvent, CUresult (*)(CUstream, CUevent, unsigned int))                              \
  X(cuStreamWaitEvent_ptsz, CUresult (*)(CUstream, CUevent, unsigned int))                         \
  X(cuEventRecord_ptsz, CUresult (*)(CUevent, CUstream))                                           \
  X(cuEventRecordWithFlags, CUresult (*)(CUevent, CUstream, unsigned int))                         \
  X(cuEventRecordWithFlags_ptsz, CUresult (*)(CUevent, CUstream, unsigned int))                    \
  X(cuStreamIsCapturing, CUresult (*)(CUstream, CUstreamCaptureStatus*))                           \
  X(cuGreenCtxStreamCreate, CUresult (*)(CUstream*, CUgreenCtx, unsigned int, int))                \
  X(cuStreamCreate, CUresult (*)(CUstream*, unsigned int))                                         \
  X(cuStreamCreateWithPriority, CUresult (*)(CUstream*, unsigned int, int))                        \
  X(cuStreamDestroy_v2, CUresult (*)(CUstream))                                                    \
  X(cuStreamBeginCapture_v2, CUresult (*)(CUstream, CUstreamCaptureMode))                          \
  X(cuStreamBeginCapture_v2_ptsz, CUresult (*)(CUstream, CUstreamCaptureMode))                     \
  X(cuStreamEndCapture, CUresult (*)(CUstream, CUgraph*))                                          \
  X(cuStreamEndCapture_ptsz, CUresult (*)(CUstream, CUgraph*))                                     \
  X(cuMemAddressReserve,                                                                           \
    CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long))                   \
  X(cuMemAddressFree, CUresult (*)(CUdeviceptr, size_t))                                           \
  X(cuMemCreate, CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,   \
                              unsigned long long))                                                 \
  X(cuMemRelease, CUresult (*)(CUmemGenericAllocationHandle))                                      \
  X(cuMemMap,                                                                                      \
    CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))   \
  X(cuMemUnmap, CUresult (*)(CUdeviceptr, size_t))                                                 \
  X(cuMemSetAccess, CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t))             \
  X(cuDevicePrimaryCtxReset_v2, CUresult (*)(CUdevice))                                            \
  X(cuDevicePrimaryCtxRelease_v2, CUresult (*)(CUdevice))                                          \
  X(cuDevicePrimaryCtxGetState, CUresult (*)(CUdevice, unsigned int*, int*))                       \
  X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext*, CUdevice))                                  \
  X(cuCtxDestroy_v2, CUresult (*)(CUcontext))                                                      \
  X(cuMemAllocAsync, CUresult (*)(CUdeviceptr*, size_t, CUstream))                                 \
  X(cuMemAllocAsync_ptsz, CUresult (*)(CUdeviceptr*, size_t, CUstream))                            \
  X(cuMemAllocFromPoolAsync, CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream))           \
  X(cuMemAllocFromPoolAsync_ptsz, CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream))      \
  X(cuMemFreeAsync, CUresult (*)(CUdeviceptr, CUstream))                                           \
  X(cuMemFreeAsync_ptsz, CUresult (*)(CUdeviceptr, CUstream))                                      \
  X(cuMemAllocManaged, CUresult (*)(CUdeviceptr*, size_t, unsigned int))                           \
  X(cuMemAllocPitch_v2, CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned int))         \
  X(cuMemAllocHost_v2, CUresult (*)(void**, size_t))                                               \
  X(cuMemHostAlloc, CUresult (*)(void**, size_t, unsigned int))                                    \
  X(cuMemFreeHost, CUresult (*)(void*))

struct RealDriver {
#define CUDAPOOL_DECLARE_REAL(name, type) std::type_identity_t<type> name = nullptr;
  CUDAPOOL_REAL_FUNCTIONS(CUDAPOOL_DECLARE_REAL)
#undef CUDAPOOL_DECLARE_REAL
};

namespace detail {
extern RealDriver g_real;
extern std::atomic<bool> g_real_loaded;
bool load_real_driver_slow();
}  // namespace detail

// The table; its entries are null until load_real_driver() found the loaded driver.
inline const RealDriver& real() {
  return detail::g_real;
}

// Looks the functions up in the libcuda.so.1 already loaded in the process. Returns false (and
// leaves the table empty) when the process has not loaded it. Safe to call often: once loaded,
// one acquire load, inlined into every hook.
inline bool load_real_driver() {
  return detail::g_real_loaded.load(std::memory_order_acquire) || detail::load_real_driver_slow();
}

// The dlsym of the C library, bypassing the shim's own hook.
// glibc's own dlsym (dlsym@GLIBC_2.34, else @GLIBC_2.2.5, through dlvsym, which is not hooked), or
// nullptr: the one lookup of it, for real_dlsym and for the exported dlsym's fast path.
void* find_real_dlsym();
void* real_dlsym(void* handle, const char* name);

}  // namespace cudapool::shim
