// shim/hooks_context.cpp: context teardown. cuCtxDestroy, cuDevicePrimaryCtxReset and the last
// cuDevicePrimaryCtxRelease take the context's memory away with it: the shim drops that context's
// pool without freeing anything (the driver did), so no later call touches a dead context. The log
// records each dropped pool (pools.h, drop_pool).
#include "shim/export.h"
#include "shim/hooks.h"
#include "shim/pools.h"

using namespace cudapool::shim;

CUDAPOOL_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (pooling()) {
    ReentrancyGuard guard;
    drop_context_pools(ctx);
  }
  return CUDAPOOL_PASS(cuCtxDestroy_v2, ctx);
}

CUDAPOOL_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (pooling()) {
    ReentrancyGuard guard;
    drop_primary_pools(dev);
  }
  return CUDAPOOL_PASS(cuDevicePrimaryCtxReset_v2, dev);
}

CUDAPOOL_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  const CUresult r = CUDAPOOL_PASS(cuDevicePrimaryCtxRelease_v2, dev);
  if (r == CUDA_SUCCESS && pooling()) {
    ReentrancyGuard guard;
    unsigned int flags = 0;
    int active = 1;
    if (real().cuDevicePrimaryCtxGetState != nullptr &&
        real().cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active) {
      drop_primary_pools(dev);  // that was the last reference: the context is gone
    }
  }
  return r;
}
