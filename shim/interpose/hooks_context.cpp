// shim/interpose/hooks_context.cpp: context teardown. cuCtxDestroy, cuDevicePrimaryCtxReset and the
// last cuDevicePrimaryCtxRelease take the context's memory away with it: the shim drops that
// context's pool without freeing its segments (the driver did), so no later call touches a dead
// context. Expandable segments' pages outlive the context in the driver: once the call succeeded,
// they are given back (context_registry.h, release_dropped_pool). The log records each dropped
// pool.
#include <vector>

#include "shim/interpose/export.h"
#include "shim/interpose/hooks.h"
#include "shim/pools/context_registry.h"

using namespace cudapool::shim;

namespace {

// After the real call: the pools dropped before it give back what the driver keeps past a
// context, but only if the context is really gone (a failed call leaves the memory in use).
void release_if_gone(CUresult r, const std::vector<ContextPool*>& dropped) {
  if (r != CUDA_SUCCESS) return;
  for (ContextPool* p : dropped) release_dropped_pool(*p);
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (!pooling()) return CUDAPOOL_PASS(cuCtxDestroy_v2, ctx);
  ReentrancyGuard guard;
  const std::vector<ContextPool*> dropped = drop_context_pools(ctx);
  const CUresult r = CUDAPOOL_PASS(cuCtxDestroy_v2, ctx);
  release_if_gone(r, dropped);
  return r;
}

CUDAPOOL_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (!pooling()) return CUDAPOOL_PASS(cuDevicePrimaryCtxReset_v2, dev);
  ReentrancyGuard guard;
  const std::vector<ContextPool*> dropped = drop_primary_pools(dev);
  const CUresult r = CUDAPOOL_PASS(cuDevicePrimaryCtxReset_v2, dev);
  release_if_gone(r, dropped);
  return r;
}

CUDAPOOL_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  const CUresult r = CUDAPOOL_PASS(cuDevicePrimaryCtxRelease_v2, dev);
  if (r == CUDA_SUCCESS && pooling()) {
    ReentrancyGuard guard;
    unsigned int flags = 0;
    int active = 1;
    if (real().cuDevicePrimaryCtxGetState != nullptr &&
        real().cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active) {
      // That was the last reference: the context is gone.
      release_if_gone(r, drop_primary_pools(dev));
    }
  }
  return r;
}
