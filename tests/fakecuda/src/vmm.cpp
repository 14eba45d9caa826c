// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/vmm.cpp: the virtual memory management calls (cuMemAddressReserve,
// cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree, granularity).
// Reservations are PROT_NONE host mappings; physical allocations are memfd files mapped into them,
// so data survives an unmap and a map elsewhere, as on a GPU. Granularity is 2 MiB. Not modelled:
// peer access, exporting handles, multicast; a forked child shares the memfd pages with its parent.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "exports.h"
#include "state.h"

using namespace fakecuda;

namespace {

CUresult check_init() {
  return S().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

// The reservation containing [p, p+size), or end().
std::map<uintptr_t, size_t>::iterator find_reservation(uintptr_t p, size_t size) {
  auto& reservations = S().reservations;
  auto it = reservations.upper_bound(p);
  if (it == reservations.begin()) return reservations.end();
  --it;
  if (p + size < p || p + size > it->first + it->second) return reservations.end();
  return it;
}

void destroy_handle(std::map<CUmemGenericAllocationHandle, PhysicalHandle>::iterator it) {
  PhysicalHandle& h = it->second;
  close(h.fd);
  S().devices[h.device].used -= h.size;
  S().handles.erase(it);
}

// Drops one mapping and restores the reservation's PROT_NONE pages under it.
void drop_mapping(std::map<uintptr_t, Mapping>::iterator it) {
  Mapping& m = it->second;
  mmap(reinterpret_cast<void*>(m.base), m.size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  auto h = S().handles.find(m.handle);
  if (h != S().handles.end() && --h->second.mappings == 0 && h->second.released) {
    destroy_handle(h);
  }
  S().mappings.erase(it);
}

}  // namespace

extern "C" {

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  FAKECUDA_ENTRY("cuMemAddressReserve");
  (void)flags;
  if (CUresult rc = check_init()) return rc;
  if (ptr == nullptr || size == 0 || size % kLargeAlignment != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment < kLargeAlignment) alignment = kLargeAlignment;
  void* p = nullptr;
  if (addr != 0 && addr % alignment == 0) {  // a hint, as for the driver
    void* want = reinterpret_cast<void*>(addr);
    void* got = mmap(want, size, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want) {
      p = got;
    } else if (got != MAP_FAILED) {
      munmap(got, size);
    }
  }
  if (p == nullptr) p = map_aligned(size, alignment, PROT_NONE, MAP_NORESERVE);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  S().reservations[reinterpret_cast<uintptr_t>(p)] = size;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKECUDA_ENTRY("cuMemAddressFree");
  if (CUresult rc = check_init()) return rc;
  auto it = S().reservations.find(ptr);
  if (it == S().reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = S().mappings.lower_bound(ptr);
  if (m != S().mappings.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;  // mapped
  munmap(reinterpret_cast<void*>(ptr), size);
  S().reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  FAKECUDA_ENTRY("cuMemCreate");
  if (CUresult rc = check_init()) return rc;
  if (handle == nullptr || prop == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!valid_device(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  if (size == 0 || size % kLargeAlignment != 0) return CUDA_ERROR_INVALID_VALUE;
  Device& dev = S().devices[prop->location.id];
  if (dev.used > dev.capacity || size > dev.capacity - dev.used) return CUDA_ERROR_OUT_OF_MEMORY;
  int fd = memfd_create("fakecuda", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  PhysicalHandle h;
  h.fd = fd;
  h.size = size;
  h.device = prop->location.id;
  h.id = S().next_id++;
  dev.used += size;
  S().handles[h.id] = h;
  *handle = h.id;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKECUDA_ENTRY("cuMemRelease");
  if (CUresult rc = check_init()) return rc;
  auto it = S().handles.find(handle);
  if (it == S().handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  it->second.released = true;
  if (it->second.mappings == 0) destroy_handle(it);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  FAKECUDA_ENTRY("cuMemMap");
  if (CUresult rc = check_init()) return rc;
  if (flags != 0 || size == 0 || size % kLargeAlignment != 0 || offset % kLargeAlignment != 0 ||
      ptr % kLargeAlignment != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto h = S().handles.find(handle);
  if (h == S().handles.end() || h->second.released) return CUDA_ERROR_INVALID_HANDLE;
  if (offset > h->second.size || size > h->second.size - offset) return CUDA_ERROR_INVALID_VALUE;
  if (find_reservation(ptr, size) == S().reservations.end()) return CUDA_ERROR_INVALID_VALUE;
  auto next = S().mappings.lower_bound(ptr);
  if (next != S().mappings.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (find_mapping(ptr) != nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* want = reinterpret_cast<void*>(ptr);
  void* got =
      mmap(want, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->second.fd, static_cast<off_t>(offset));
  if (got != want) return CUDA_ERROR_OUT_OF_MEMORY;
  Mapping m;
  m.base = ptr;
  m.size = size;
  m.offset = offset;
  m.handle = handle;
  m.device = h->second.device;
  S().mappings[ptr] = m;
  ++h->second.mappings;
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKECUDA_ENTRY("cuMemUnmap");
  if (CUresult rc = check_init()) return rc;
  auto& mappings = S().mappings;
  // The range must be made of whole mappings, starting with one at ptr.
  if (size == 0 || mappings.count(ptr) == 0) return CUDA_ERROR_INVALID_VALUE;
  auto end = mappings.lower_bound(ptr + size);
  for (auto it = mappings.find(ptr); it != end; ++it) {
    if (it->first + it->second.size > ptr + size) return CUDA_ERROR_INVALID_VALUE;
  }
  for (auto it = mappings.find(ptr); it != end;) {
    auto next = std::next(it);
    drop_mapping(it);
    it = next;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  FAKECUDA_ENTRY("cuMemSetAccess");
  if (CUresult rc = check_init()) return rc;
  if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        !valid_device(desc[i].location.id)) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot |= PROT_READ | PROT_WRITE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ) prot |= PROT_READ;
  }
  // Every byte of the range must be mapped.
  for (uintptr_t at = ptr; at < ptr + size;) {
    Mapping* m = find_mapping(at);
    if (m == nullptr) return CUDA_ERROR_INVALID_VALUE;
    at = m->base + m->size;
  }
  for (uintptr_t at = ptr; at < ptr + size;) {
    Mapping* m = find_mapping(at);
    m->prot = prot;
    at = m->base + m->size;
  }
  if (mprotect(reinterpret_cast<void*>(ptr), size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  FAKECUDA_ENTRY("cuMemGetAllocationGranularity");
  (void)option;
  if (CUresult rc = check_init()) return rc;
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *granularity = kLargeAlignment;
  return CUDA_SUCCESS;
}

}  // extern "C"
