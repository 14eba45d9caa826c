// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/context.cpp: initialization, version, devices, primary and created contexts,
// the per-thread current context, and error names. Not modelled: context flags beyond storing
// them, peer access, per-context limits; a context's streams survive its destruction.
#include <cstdio>
#include <cstring>

#include "exports.h"
#include "state.h"

using namespace fakecuda;

namespace {

CUresult check_init() {
  return S().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult create_context(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (CUresult rc = check_init()) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  auto* ctx = new Context();
  ctx->device = dev;
  ctx->active = true;
  ctx->id = next_context_id();
  ctx->flags = flags;
  ctx->default_stream.ctx = ctx;
  ctx->default_stream.is_default = true;
  if (!push_context(ctx)) {
    delete ctx;
    return CUDA_ERROR_INVALID_VALUE;
  }
  S().contexts.insert(ctx);
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

CUresult destroy_context(CUcontext handle) {
  if (CUresult rc = check_init()) return rc;
  auto* ctx = reinterpret_cast<Context*>(handle);
  if (ctx == nullptr || S().contexts.count(ctx) == 0 || ctx->primary) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  complete_context(ctx);
  release_context_allocations(ctx);
  ctx->active = false;
  S().contexts.erase(ctx);  // the object is kept: other threads may still name it
  if (current_context() == ctx) pop_context();
  return CUDA_SUCCESS;
}

CUresult push_current(CUcontext handle) {
  if (CUresult rc = check_init()) return rc;
  auto* ctx = reinterpret_cast<Context*>(handle);
  if (ctx == nullptr || S().contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  return push_context(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult pop_current(CUcontext* pctx) {
  if (CUresult rc = check_init()) return rc;
  if (current_context() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  Context* ctx = pop_context();
  if (pctx != nullptr) *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

void reset_primary(Device& dev) {
  complete_context(dev.primary);
  release_context_allocations(dev.primary);
}

CUresult primary_release(CUdevice d) {
  if (CUresult rc = check_init()) return rc;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  Device& dev = S().devices[d];
  if (dev.primary->refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--dev.primary->refcount == 0) {
    reset_primary(dev);
    dev.primary->active = false;
  }
  return CUDA_SUCCESS;
}

CUresult primary_reset(CUdevice d) {
  if (CUresult rc = check_init()) return rc;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  reset_primary(S().devices[d]);
  return CUDA_SUCCESS;
}

int attribute_value(CUdevice_attribute attrib, CUdevice dev) {
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      return 1980000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
      return 512;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return 132;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
      return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      return 0x10 + dev;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return 50 << 20;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      return 3;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      return 233472;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return 232448;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      return 1;
    default:
      return 0;
  }
}

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

#define FAKECUDA_ERROR(code, text) \
  { code, #code, text }
const ErrorText kErrors[] = {
    FAKECUDA_ERROR(CUDA_SUCCESS, "no error"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    FAKECUDA_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    FAKECUDA_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    FAKECUDA_ERROR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    FAKECUDA_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    FAKECUDA_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    FAKECUDA_ERROR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    FAKECUDA_ERROR(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    FAKECUDA_ERROR(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    FAKECUDA_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    FAKECUDA_ERROR(CUDA_ERROR_OPERATING_SYSTEM,
                   "OS call failed or operation not supported on this OS"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    FAKECUDA_ERROR(CUDA_ERROR_ILLEGAL_STATE,
                   "the operation cannot be performed in the present state"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    FAKECUDA_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    FAKECUDA_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    FAKECUDA_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active"),
    FAKECUDA_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    FAKECUDA_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                   "part or all of the requested memory range is already mapped"),
    FAKECUDA_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                   "pointer does not correspond to a registered memory region"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                   "operation not permitted when stream is capturing"),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                   "operation failed due to a previous error during capture"),
    FAKECUDA_ERROR(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    FAKECUDA_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
    // The rest: the name stands for the text.
    FAKECUDA_ERROR(CUDA_ERROR_ALREADY_ACQUIRED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_ARRAY_IS_MAPPED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_ASSERT, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_CAPTURED_EVENT, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_CDP_NOT_SUPPORTED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_CDP_VERSION_MISMATCH, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_CONTAINED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_DEVICE_NOT_LICENSED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_DEVICE_UNAVAILABLE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_ECC_UNCORRECTABLE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_EXTERNAL_DEVICE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_FUNCTION_NOT_LOADED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_HARDWARE_STACK_ERROR, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_ADDRESS_SPACE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_CLUSTER_SIZE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_PC, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_PTX, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_RESOURCE_TYPE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_JIT_COMPILATION_DISABLED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_KEY_ROTATION, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_LOSSY_QUERY, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_MPS_CLIENT_TERMINATED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_MPS_CONNECTION_FAILED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_MPS_RPC_FAILURE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_MPS_SERVER_NOT_READY, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_MAPPED_AS_POINTER, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_NVLINK_UNCORRECTABLE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_PROFILER_ALREADY_STARTED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_PROFILER_ALREADY_STOPPED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_PROFILER_DISABLED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_PROFILER_NOT_INITIALIZED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_MERGE, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_SYSTEM_NOT_READY, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_TENSOR_MEMORY_LEAK, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_TOO_MANY_PEERS, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_UNSUPPORTED_LIMIT, nullptr),
    FAKECUDA_ERROR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, nullptr),
};
#undef FAKECUDA_ERROR

const ErrorText* find_error(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace

bool fakecuda::error_from_name(std::string_view name, CUresult* code) {
  for (const ErrorText& e : kErrors) {
    if (name == e.name) {
      *code = e.code;
      return true;
    }
  }
  return false;
}

const char* fakecuda::error_name(CUresult code) {
  const ErrorText* e = find_error(code);
  return e == nullptr ? nullptr : e->name;
}

unsigned long long fakecuda::next_context_id() {
  static unsigned long long next = 0;
  return ++next;
}

extern "C" {

CUresult cuInit(unsigned int Flags) {
  FAKECUDA_ENTRY("cuInit");
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  S().initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  FAKECUDA_ENTRY("cuDriverGetVersion");
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKECUDA_ENTRY("cuDeviceGet");
  if (CUresult rc = check_init()) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  FAKECUDA_ENTRY("cuDeviceGetCount");
  if (CUresult rc = check_init()) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = S().device_count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  FAKECUDA_ENTRY("cuDeviceGetName");
  if (CUresult rc = check_init()) return rc;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "fakecuda device %d", dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  FAKECUDA_ENTRY("cuDeviceTotalMem_v2");
  if (CUresult rc = check_init()) return rc;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = S().devices[dev].capacity;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  FAKECUDA_ENTRY("cuDeviceGetAttribute");
  if (CUresult rc = check_init()) return rc;
  if (pi == nullptr || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pi = attribute_value(attrib, dev);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  FAKECUDA_ENTRY("cuDevicePrimaryCtxRetain");
  if (CUresult rc = check_init()) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  Context* ctx = S().devices[dev].primary;
  ++ctx->refcount;
  if (!ctx->active) ctx->id = next_context_id();  // a new lifetime of the primary context
  ctx->active = true;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  FAKECUDA_ENTRY("cuDevicePrimaryCtxRelease");
  return primary_release(dev);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  FAKECUDA_ENTRY("cuDevicePrimaryCtxRelease_v2");
  return primary_release(dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  FAKECUDA_ENTRY("cuDevicePrimaryCtxReset");
  return primary_reset(dev);
}

// What cudart's cudaDeviceReset does through its private interface: the primary context is reset
// (its memory gone) and comes back under a new id, without any exported entry point being called.
int fakecuda_reset_primary_unseen(int dev) {
  ::fakecuda::Lock lock;
  if (!S().initialized || !valid_device(dev)) return -1;
  reset_primary(S().devices[dev]);
  S().devices[dev].primary->id = next_context_id();
  return 0;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  FAKECUDA_ENTRY("cuDevicePrimaryCtxReset_v2");
  return primary_reset(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  FAKECUDA_ENTRY("cuDevicePrimaryCtxGetState");
  if (CUresult rc = check_init()) return rc;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *flags = S().devices[dev].primary->flags;
  *active = S().devices[dev].primary->active ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  FAKECUDA_ENTRY("cuCtxGetCurrent");
  if (CUresult rc = check_init()) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = reinterpret_cast<CUcontext>(current_context());
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext handle) {
  FAKECUDA_ENTRY("cuCtxSetCurrent");
  if (CUresult rc = check_init()) return rc;
  auto* ctx = reinterpret_cast<Context*>(handle);
  if (ctx != nullptr && S().contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  set_current_context(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext handle, unsigned long long* id) {
  FAKECUDA_ENTRY("cuCtxGetId");
  if (CUresult rc = check_init()) return rc;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = reinterpret_cast<Context*>(handle);
  if (ctx == nullptr) {
    if (CUresult rc = require_context(&ctx)) return rc;
  } else if (S().contexts.count(ctx) == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!ctx->active) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *id = ctx->id;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  FAKECUDA_ENTRY("cuCtxGetDevice");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  FAKECUDA_ENTRY("cuCtxPushCurrent");
  return push_current(ctx);
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  FAKECUDA_ENTRY("cuCtxPushCurrent_v2");
  return push_current(ctx);
}

CUresult cuCtxPopCurrent(CUcontext* pctx) {
  FAKECUDA_ENTRY("cuCtxPopCurrent");
  return pop_current(pctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  FAKECUDA_ENTRY("cuCtxPopCurrent_v2");
  return pop_current(pctx);
}

CUresult cuCtxSynchronize(void) {
  FAKECUDA_WAIT_ENTRY("cuCtxSynchronize");
  Context* ctx = nullptr;
  if (CUresult rc = require_context(&ctx)) return FAKECUDA_WAITED(rc);
  if (CUresult rc = capture_allows_unsafe_call()) return FAKECUDA_WAITED(rc);
  complete_context(ctx);
  ++S().sync_count;
  return FAKECUDA_WAITED(CUDA_SUCCESS);
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  FAKECUDA_ENTRY("cuCtxCreate_v2");
  return create_context(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  FAKECUDA_ENTRY("cuCtxCreate_v3");
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return create_context(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  FAKECUDA_ENTRY("cuCtxCreate_v4");
  (void)ctxCreateParams;
  return create_context(pctx, flags, dev);
}

CUresult cuCtxDestroy(CUcontext ctx) {
  FAKECUDA_ENTRY("cuCtxDestroy");
  return destroy_context(ctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  FAKECUDA_ENTRY("cuCtxDestroy_v2");
  return destroy_context(ctx);
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  FAKECUDA_ENTRY("cuGetErrorString");
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  *pStr = e == nullptr ? nullptr : (e->text != nullptr ? e->text : e->name);
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  FAKECUDA_ENTRY("cuGetErrorName");
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  *pStr = e == nullptr ? nullptr : e->name;
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

}  // extern "C"
