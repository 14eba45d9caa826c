// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/memory.cpp: device, pitched, managed, stream-ordered and pinned host
// allocations, memory info, address ranges, pointer attributes, memset/memcpy, IPC handles. Device
// pointers are host addresses (512-byte aligned, 2 MiB from 2 MiB on), so tests may read and write
// them directly. Not modelled: managed migration, mempools beyond cuMemAllocAsync/cuMemFreeAsync,
// opening IPC handles, asynchrony (copies and sets happen at once).
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "exports.h"
#include "state.h"

using namespace fakecuda;

namespace {

struct Region {
  uintptr_t base = 0;
  size_t size = 0;
  int device = 0;
  Context* ctx = nullptr;
  Kind kind = Kind::kDevice;
  bool vmm = false;
  unsigned long long id = 0;
};

bool describe(uintptr_t p, Region* r) {
  if (Allocation* a = find_containing(p)) {
    *r = Region{a->base, a->size, a->device, a->ctx, a->kind, false, a->id};
    return true;
  }
  if (Mapping* m = find_mapping(p)) {
    auto h = S().handles.find(m->handle);
    unsigned long long id = h == S().handles.end() ? 0 : h->second.id;
    *r = Region{m->base, m->size, m->device, nullptr, Kind::kDevice, true, id};
    return true;
  }
  return false;
}

template <typename T>
void put(void* data, T value) {
  std::memcpy(data, &value, sizeof(T));
}

// Writes one attribute of a known region. Booleans are written as int, as callers pass them.
CUresult write_attribute(void* data, CUpointer_attribute attribute, uintptr_t p, const Region& r) {
  bool device_kind = r.kind == Kind::kDevice || r.kind == Kind::kPitch || r.kind == Kind::kAsync;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      put(data, reinterpret_cast<CUcontext>(r.ctx));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      put(data,
          static_cast<unsigned>(r.kind == Kind::kHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      put(data, static_cast<CUdeviceptr>(p));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (device_kind || r.vmm) return CUDA_ERROR_INVALID_VALUE;
      put(data, reinterpret_cast<void*>(p));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      put(data, 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      put(data, r.id);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      put(data, r.kind == Kind::kManaged ? 1 : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(data, r.device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      put(data, (r.kind == Kind::kDevice || r.kind == Kind::kPitch) && !r.vmm ? 1 : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      put(data, static_cast<CUdeviceptr>(r.base));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      put(data, r.size);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      put(data, 1);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put(data, static_cast<unsigned long long>(r.vmm ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                                      : CU_MEM_HANDLE_TYPE_NONE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put(data, static_cast<unsigned>(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      put(data, static_cast<CUmemoryPool>(nullptr));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// What cuPointerGetAttributes writes for a pointer the driver does not know.
CUresult write_default(void* data, CUpointer_attribute attribute) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      put(data, static_cast<CUcontext>(nullptr));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      put(data, static_cast<void*>(nullptr));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put(data, 0u);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      put(data, CUdeviceptr{0});
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      put(data, size_t{0});
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put(data, 0ull);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(data, -2);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      if (attribute <= 0 || attribute > CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      put(data, 0);
      return CUDA_SUCCESS;
  }
}

// Frees the allocation based at p when its kind is one of `kinds`.
CUresult free_base(CUdeviceptr p, std::initializer_list<Kind> kinds) {
  auto& allocations = S().allocations;
  auto it = allocations.find(static_cast<uintptr_t>(p));
  if (it == allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  bool match = false;
  for (Kind k : kinds) match = match || it->second.kind == k;
  if (!match) return CUDA_ERROR_INVALID_VALUE;
  release(it);
  return CUDA_SUCCESS;
}

CUresult memset_d8(CUdeviceptr dst, unsigned char value, size_t n) {
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (!accessible_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  if (n > 0) std::memset(reinterpret_cast<void*>(dst), value, n);
  return CUDA_SUCCESS;
}

CUresult copy_htod(CUdeviceptr dst, const void* src, size_t n) {
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if ((src == nullptr && n > 0) || !accessible_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  if (n > 0) std::memmove(reinterpret_cast<void*>(dst), src, n);
  return CUDA_SUCCESS;
}

CUresult copy_dtoh(void* dst, CUdeviceptr src, size_t n) {
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if ((dst == nullptr && n > 0) || !accessible_range(src, n)) return CUDA_ERROR_INVALID_VALUE;
  if (n > 0) std::memmove(dst, reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

CUresult alloc_async(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  CUresult rc = CUDA_SUCCESS;
  if (resolve_stream(stream, &rc) == nullptr) return rc;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  return allocate(bytesize, Kind::kAsync, ctx, dptr);
}

CUresult free_async(CUdeviceptr dptr, CUstream stream) {
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  CUresult rc = CUDA_SUCCESS;
  if (resolve_stream(stream, &rc) == nullptr) return rc;
  return free_base(dptr, {Kind::kAsync});
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  FAKECUDA_ENTRY("cuMemAlloc_v2");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  // The capture's rule before the arguments: the driver answers a call of 0 bytes during a
  // global capture with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture (H200,
  // driver 580.159.04, tests/gpu/capture_rules.cpp's alloc-of-0-bytes).
  if (CUresult rc = capture_allows_unsafe_call()) return rc;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (S().fail_next_alloc > 0) {
    --S().fail_next_alloc;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return allocate(bytesize, Kind::kDevice, ctx, dptr);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  FAKECUDA_ENTRY("cuMemFree_v2");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (CUresult rc = capture_allows_unsafe_call()) return rc;
  return free_base(dptr, {Kind::kDevice, Kind::kPitch, Kind::kAsync, Kind::kManaged});
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  FAKECUDA_ENTRY("cuMemGetInfo_v2");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Device& dev = S().devices[ctx->device];
  *free = dev.used >= dev.capacity ? 0 : dev.capacity - dev.used;
  *total = dev.capacity;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  FAKECUDA_ENTRY("cuMemGetAddressRange_v2");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  Region r;
  if (!describe(dptr, &r)) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = r.base;
  if (psize != nullptr) *psize = r.size;
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FAKECUDA_ENTRY("cuPointerGetAttribute");
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Region r;
  if (!describe(ptr, &r)) return CUDA_ERROR_INVALID_VALUE;
  return write_attribute(data, attribute, ptr, r);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                void** data, CUdeviceptr ptr) {
  FAKECUDA_ENTRY("cuPointerGetAttributes");
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (numAttributes == 0 || attributes == nullptr || data == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Region r;
  bool known = describe(ptr, &r);
  for (unsigned i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = known ? write_attribute(data[i], attributes[i], ptr, r)
                        : write_default(data[i], attributes[i]);
    if (rc == CUDA_ERROR_INVALID_VALUE && known &&
        attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
      put(data[i], static_cast<void*>(nullptr));  // device memory has no host pointer
      rc = CUDA_SUCCESS;
    }
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  FAKECUDA_ENTRY("cuMemsetD8_v2");
  return memset_d8(dstDevice, uc, N);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  FAKECUDA_ENTRY("cuMemsetD8_v2_ptds");
  return memset_d8(dstDevice, uc, N);
}

// Stream-ordered work, done at once (a held stream's events still stay incomplete: the test
// double's model of queued work, streams.cpp).
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  FAKECUDA_ENTRY("cuMemsetD8Async");
  CUresult rc = CUDA_SUCCESS;
  if (resolve_stream(hStream, &rc) == nullptr) return rc;
  return memset_d8(dstDevice, uc, N);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  FAKECUDA_ENTRY("cuMemsetD8Async_ptsz");
  CUresult rc = CUDA_SUCCESS;
  if (resolve_stream(hStream, &rc) == nullptr) return rc;
  return memset_d8(dstDevice, uc, N);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  FAKECUDA_ENTRY("cuMemcpyHtoD_v2");
  return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  FAKECUDA_ENTRY("cuMemcpyHtoD_v2_ptds");
  return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKECUDA_ENTRY("cuMemcpyDtoH_v2");
  return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKECUDA_ENTRY("cuMemcpyDtoH_v2_ptds");
  return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  FAKECUDA_ENTRY("cuMemAllocPitch_v2");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (dptr == nullptr || pPitch == nullptr || WidthInBytes == 0 || Height == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t pitch = round_up(WidthInBytes, kSmallAlignment);
  if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = allocate(pitch * Height, Kind::kPitch, ctx, dptr);
  if (rc == CUDA_SUCCESS) *pPitch = pitch;
  return rc;
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  FAKECUDA_ENTRY("cuMemAllocManaged");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return allocate(bytesize, Kind::kManaged, ctx, dptr);
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  FAKECUDA_ENTRY("cuMemAllocHost_v2");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (pp == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr p = 0;
  CUresult rc = allocate(bytesize, Kind::kHost, ctx, &p);
  if (rc == CUDA_SUCCESS) *pp = reinterpret_cast<void*>(p);
  return rc;
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  FAKECUDA_ENTRY("cuMemHostAlloc");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  const unsigned known =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (pp == nullptr || bytesize == 0 || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr p = 0;
  CUresult rc = allocate(bytesize, Kind::kHost, ctx, &p);
  if (rc == CUDA_SUCCESS) *pp = reinterpret_cast<void*>(p);
  return rc;
}

CUresult cuMemFreeHost(void* p) {
  FAKECUDA_ENTRY("cuMemFreeHost");
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return free_base(reinterpret_cast<CUdeviceptr>(p), {Kind::kHost});
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  FAKECUDA_ENTRY("cuMemAllocAsync");
  return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  FAKECUDA_ENTRY("cuMemAllocAsync_ptsz");
  return alloc_async(dptr, bytesize, hStream);
}

// The pool is not modelled: any handle allocates as cuMemAllocAsync does.
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool,
                                 CUstream hStream) {
  FAKECUDA_ENTRY("cuMemAllocFromPoolAsync");
  return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool,
                                      CUstream hStream) {
  FAKECUDA_ENTRY("cuMemAllocFromPoolAsync_ptsz");
  return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  FAKECUDA_ENTRY("cuMemFreeAsync");
  return free_async(dptr, hStream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  FAKECUDA_ENTRY("cuMemFreeAsync_ptsz");
  return free_async(dptr, hStream);
}

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  FAKECUDA_ENTRY("cuIpcGetMemHandle");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Allocation* a = find_containing(dptr);
  if (a == nullptr || (a->kind != Kind::kDevice && a->kind != Kind::kPitch)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memset(pHandle, 0, sizeof(*pHandle));
  struct {
    char magic[8];
    long long pid;
    unsigned long long base, size, id;
  } body{{'f', 'a', 'k', 'e', 'c', 'u', 'd', 'a'},
         static_cast<long long>(getpid()),
         a->base,
         a->size,
         a->id};
  static_assert(sizeof(body) <= sizeof(pHandle->reserved));
  std::memcpy(pHandle->reserved, &body, sizeof(body));
  return CUDA_SUCCESS;
}

}  // extern "C"
