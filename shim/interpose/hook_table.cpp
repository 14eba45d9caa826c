// shim/interpose/hook_table.cpp: which real driver function each hook stands for. A lookup (dlsym
// on the driver's handle, cuGetProcAddress) is answered with a hook only when the pointer the
// driver returned IS one of the real functions below (looked up by exact versioned name): never by
// guessing from the requested name, whose version suffix the driver resolves itself.
#include <array>
#include <atomic>
#include <mutex>
#include <utility>

#include "shim/interpose/export.h"
#include "shim/interpose/hooks.h"
#include "shim/interpose/stream_work.h"

// The hooks, defined in hooks_*.cpp and proc_address.cpp.
extern "C" {
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemGetInfo_v2(size_t*, size_t*);
CUresult cuMemGetAddressRange_v2(CUdeviceptr*, size_t*, CUdeviceptr);
CUresult cuPointerGetAttribute(void*, CUpointer_attribute, CUdeviceptr);
CUresult cuPointerGetAttributes(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);
CUresult cuIpcGetMemHandle(CUipcMemHandle*, CUdeviceptr);
CUresult cuStreamCreate(CUstream*, unsigned int);
CUresult cuStreamCreateWithPriority(CUstream*, unsigned int, int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuGreenCtxStreamCreate(CUstream*, CUgreenCtx, unsigned int, int);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventRecord_ptsz(CUevent, CUstream);
CUresult cuEventRecordWithFlags(CUevent, CUstream, unsigned int);
CUresult cuEventRecordWithFlags_ptsz(CUevent, CUstream, unsigned int);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int);
CUresult cuStreamWaitEvent_ptsz(CUstream, CUevent, unsigned int);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode);
CUresult cuStreamEndCapture(CUstream, CUgraph*);
CUresult cuStreamEndCapture_ptsz(CUstream, CUgraph*);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice);
CUresult cuMemAllocAsync(CUdeviceptr*, size_t, CUstream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemAllocManaged(CUdeviceptr*, size_t, unsigned int);
CUresult cuMemAllocPitch_v2(CUdeviceptr*, size_t*, size_t, size_t, unsigned int);
CUresult cuMemCreate(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                     unsigned long long);
CUresult cuMemRelease(CUmemGenericAllocationHandle);
CUresult cuMemMap(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
CUresult cuMemUnmap(CUdeviceptr, size_t);
CUresult cuMemAllocHost_v2(void**, size_t);
CUresult cuMemHostAlloc(void**, size_t, unsigned int);
CUresult cuMemFreeHost(void*);
CUresult cuGetProcAddress(const char*, void**, int, cuuint64_t);
CUresult cuGetProcAddress_v2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
}

namespace cudapool::shim {

namespace {

#define CUDAPOOL_HOOKED(X)                                                                         \
  X(cuMemAlloc_v2)                                                                                 \
  X(cuMemFree_v2)                                                                                  \
  X(cuMemGetInfo_v2) X(cuMemGetAddressRange_v2) X(cuPointerGetAttribute) X(cuPointerGetAttributes) \
      X(cuIpcGetMemHandle) X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuStreamDestroy_v2)   \
          X(cuGreenCtxStreamCreate) X(cuEventRecord) X(cuEventRecord_ptsz)                         \
              X(cuEventRecordWithFlags) X(cuEventRecordWithFlags_ptsz) X(cuStreamWaitEvent)        \
                  X(cuStreamWaitEvent_ptsz) X(cuEventDestroy_v2) X(cuStreamBeginCapture_v2)        \
                      X(cuStreamBeginCapture_v2_ptsz) X(cuStreamEndCapture)                        \
                          X(cuStreamEndCapture_ptsz) X(cuCtxDestroy_v2)                            \
                              X(cuDevicePrimaryCtxReset_v2) X(cuDevicePrimaryCtxRelease_v2)        \
                                  X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)                       \
                                      X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz)   \
                                          X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)                 \
                                              X(cuMemAllocManaged) X(cuMemAllocPitch_v2)           \
                                                  X(cuMemCreate) X(cuMemRelease) X(cuMemMap)       \
                                                      X(cuMemUnmap) X(cuMemAllocHost_v2)           \
                                                          X(cuMemHostAlloc) X(cuMemFreeHost)       \
                                                              X(cuGetProcAddress)                  \
                                                                  X(cuGetProcAddress_v2)

#define CUDAPOOL_COUNT(name) +1
constexpr int kHooks = 0 CUDAPOOL_HOOKED(CUDAPOOL_COUNT);
#undef CUDAPOOL_COUNT

struct Pair {
  void* real;
  void* hook;
};
std::array<Pair, kHooks> g_pairs{};
std::atomic<bool> g_built{false};
std::mutex g_build_mutex;

bool build() {
  if (g_built.load(std::memory_order_acquire)) return true;
  if (!load_real_driver()) return false;
  std::lock_guard<std::mutex> lock(g_build_mutex);
  if (g_built.load(std::memory_order_relaxed)) return true;
  int i = 0;
#define CUDAPOOL_PAIR(name) \
  g_pairs[i++] = Pair{reinterpret_cast<void*>(real().name), reinterpret_cast<void*>(&::name)};
  CUDAPOOL_HOOKED(CUDAPOOL_PAIR)
#undef CUDAPOOL_PAIR
  g_built.store(true, std::memory_order_release);
  return true;
}

}  // namespace

void* hook_for(void* real_function) {
  if (real_function == nullptr || !build()) return real_function;
  for (const Pair& p : g_pairs) {
    if (p.real == real_function) return p.hook;
  }
  if (void* hook = stream_work_hook_for(real_function)) return hook;
  return real_function;
}

}  // namespace cudapool::shim
