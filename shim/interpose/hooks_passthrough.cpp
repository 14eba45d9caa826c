// SPDX-License-Identifier: Apache-2.0
// shim/interpose/hooks_passthrough.cpp: allocation entry points the pool leaves alone
// (stream-ordered allocations, which may be graph memory nodes; managed and pitched memory; the
// virtual memory API, cuMemCreate/cuMemMap, which NCCL, XLA and PyTorch's expandable segments use;
// page-locked host memory). They reach the driver unchanged; the allocation log records them. A
// stream-ordered free of a pooled block (allowed by CUDA for any device pointer) goes back to the
// pool; one of a pointer inside a pooled segment that is no allocated block is refused, as
// cuMemFree_v2 refuses it.
#include <mutex>

#include "shim/driver/export.h"
#include "shim/interpose/hooks.h"
#include "shim/pools/context_registry.h"
#include "shim/pools/pooled_free.h"
#include "shim/recording/event_log.h"

using namespace cudapool::shim;

namespace {

// A stream-ordered free of a pooled pointer: the pool's answer, or false for the driver to give.
bool free_pooled(CUdeviceptr dptr, CUresult* result) {
  if (dptr == 0 || !pooling()) return false;
  ReentrancyGuard guard;
  CUresult ignored = CUDA_SUCCESS;
  return pooled_free_answer(
      free_pooled_pointer(current_pool(&ignored), static_cast<std::uintptr_t>(dptr)), result);
}

}  // namespace

namespace {

// Logs a pass-through call (after it returned) when a log is written. device < 0: the current
// context's.
void note_value(cudapool::log::LogAction action, CUresult r, std::uint64_t ptr, std::uint64_t size,
                CUstream stream = nullptr, int device = -1) {
  if (!pooling() || !logging()) return;
  ReentrancyGuard guard;
  if (device < 0) {
    CUdevice current = 0;
    real().cuCtxGetDevice(&current);
    device = current;
  }
  log_event(action, device, ptr, size, r, reinterpret_cast<std::uint64_t>(stream));
}

void note(cudapool::log::LogAction action, CUresult r, const CUdeviceptr* dptr, std::uint64_t size,
          CUstream stream = nullptr) {
  note_value(action, r, dptr != nullptr && r == CUDA_SUCCESS ? *dptr : 0, size, stream);
}

// The same for an allocation of page-locked host memory (*pp: the host pointer).
void note_host(CUresult r, void* const* pp, std::uint64_t size) {
  note_value(cudapool::log::LogAction::kAllocHost, r,
             pp != nullptr && r == CUDA_SUCCESS ? reinterpret_cast<std::uint64_t>(*pp) : 0, size);
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

CUDAPOOL_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize,
                                                 CUmemoryPool pool, CUstream stream) {
  const CUresult r = CUDAPOOL_PASS(cuMemAllocFromPoolAsync, dptr, bytesize, pool, stream);
  note(cudapool::log::LogAction::kAllocAsync, r, dptr, bytesize, stream);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                      CUmemoryPool pool, CUstream stream) {
  const CUresult r = CUDAPOOL_PASS(cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, stream);
  note(cudapool::log::LogAction::kAllocAsync, r, dptr, bytesize, stream);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  if (CUresult pooled = CUDA_SUCCESS; free_pooled(dptr, &pooled)) return pooled;
  const CUresult r = CUDAPOOL_PASS(cuMemFreeAsync, dptr, stream);
  note(cudapool::log::LogAction::kFreeAsync, r, &dptr, 0, stream);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  if (CUresult pooled = CUDA_SUCCESS; free_pooled(dptr, &pooled)) return pooled;
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

// --- the virtual memory API: logged, never pooled ------------------------------------------------

CUDAPOOL_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                     const CUmemAllocationProp* prop, unsigned long long flags) {
  const CUresult r = CUDAPOOL_PASS(cuMemCreate, handle, size, prop, flags);
  const int device = prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                         ? prop->location.id
                         : -1;
  note_value(cudapool::log::LogAction::kVmmCreate, r,
             r == CUDA_SUCCESS && handle != nullptr ? *handle : 0, size, nullptr, device);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  const CUresult r = CUDAPOOL_PASS(cuMemRelease, handle);
  note_value(cudapool::log::LogAction::kVmmRelease, r, handle, 0);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                  CUmemGenericAllocationHandle handle, unsigned long long flags) {
  const CUresult r = CUDAPOOL_PASS(cuMemMap, ptr, size, offset, handle, flags);
  note_value(cudapool::log::LogAction::kVmmMap, r, ptr, size);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  const CUresult r = CUDAPOOL_PASS(cuMemUnmap, ptr, size);
  note_value(cudapool::log::LogAction::kVmmUnmap, r, ptr, size);
  return r;
}

// --- page-locked host memory: logged -------------------------------------------------------------

CUDAPOOL_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  const CUresult r = CUDAPOOL_PASS(cuMemAllocHost_v2, pp, bytesize);
  note_host(r, pp, bytesize);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  const CUresult r = CUDAPOOL_PASS(cuMemHostAlloc, pp, bytesize, flags);
  note_host(r, pp, bytesize);
  return r;
}

CUDAPOOL_EXPORT CUresult cuMemFreeHost(void* p) {
  const CUresult r = CUDAPOOL_PASS(cuMemFreeHost, p);
  note_value(cudapool::log::LogAction::kFreeHost, r, reinterpret_cast<std::uint64_t>(p), 0);
  return r;
}
