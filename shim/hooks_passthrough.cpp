// shim/hooks_passthrough.cpp: allocation entry points the pool leaves alone (stream-ordered
// allocations, which may be graph memory nodes; managed and pitched memory). They reach the driver
// unchanged; the allocation log (issue #4) records them. A stream-ordered free of a pooled block
// (allowed by CUDA for any device pointer) goes back to the pool.
#include <mutex>

#include "shim/export.h"
#include "shim/hooks.h"
#include "shim/logging.h"
#include "shim/pools.h"

using namespace cudapool::shim;

namespace {

bool free_pooled(CUdeviceptr dptr) {
  if (dptr == 0 || !pooling()) return false;
  ReentrancyGuard guard;
  return for_each_pool([&](ContextPool& p) {
    std::lock_guard<SpinLock> lock(p.mutex);
    return p.pool.free(static_cast<std::uintptr_t>(dptr)) == cudapool::pool::FreeStatus::kOk;
  });
}

}  // namespace

namespace {

// Logs a pass-through call (after it returned) when a log is written.
void note(cudapool::log::LogAction action, CUresult r, const CUdeviceptr* dptr, std::uint64_t size,
          CUstream stream = nullptr) {
  if (!pooling() || !logging()) return;
  ReentrancyGuard guard;
  CUdevice device = 0;
  real().cuCtxGetDevice(&device);
  log_event(action, device, dptr != nullptr && r == CUDA_SUCCESS ? *dptr : 0, size, r,
            reinterpret_cast<std::uint64_t>(stream));
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  const CUresult r = CUDAPOOL_PASS(cuMemAllocAsync, dptr, bytesize, stream);
  note(cudapool::log::LogAction::kAllocAsync, r, dptr, bytesize, stream);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  const CUresult r = CUDAPOOL_PASS(cuMemAllocAsync_ptsz, dptr, bytesize, stream);
  note(cudapool::log::LogAction::kAllocAsync, r, dptr, bytesize, stream);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  if (free_pooled(dptr)) return CUDA_SUCCESS;
  const CUresult r = CUDAPOOL_PASS(cuMemFreeAsync, dptr, stream);
  note(cudapool::log::LogAction::kFreeAsync, r, &dptr, 0, stream);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  if (free_pooled(dptr)) return CUDA_SUCCESS;
  const CUresult r = CUDAPOOL_PASS(cuMemFreeAsync_ptsz, dptr, stream);
  note(cudapool::log::LogAction::kFreeAsync, r, &dptr, 0, stream);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  const CUresult r = CUDAPOOL_PASS(cuMemAllocManaged, dptr, bytesize, flags);
  note(cudapool::log::LogAction::kAllocManaged, r, dptr, bytesize);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                            size_t height, unsigned int element_size) {
  const CUresult r = CUDAPOOL_PASS(cuMemAllocPitch_v2, dptr, pitch, width, height, element_size);
  note(cudapool::log::LogAction::kAllocPitch, r, dptr,
       r == CUDA_SUCCESS && pitch != nullptr ? *pitch * height : width * height);
  return r;
}
