// SPDX-License-Identifier: Apache-2.0
// shim/interpose/hooks_context.cpp: context teardown. cuCtxDestroy, cuDevicePrimaryCtxReset and the
// last cuDevicePrimaryCtxRelease take the context's memory away with it: the shim drops that
// context's pool without freeing its segments (the driver did), so no later call touches a dead
// context. Expandable segments' pages outlive the context in the driver: they are given back
// (context_registry.h, release_dropped_pool). All of it once the call succeeded: a destroy or
// reset that fails leaves the context, its memory and its pool in use (before, the pool was
// dropped first and a failed call left its blocks with no pool: found by
// tests/fakecuda/fault_sweep.sh). The log records each dropped pool.
#include <vector>

#include "shim/driver/export.h"
#include "shim/interpose/hooks.h"
#include "shim/pools/context_registry.h"

using namespace cudapool::shim;

namespace {

// Once a call took the context away: its dropped pools give back what the driver keeps past it.
void release_all(const std::vector<ContextPool*>& dropped) {
  for (ContextPool* p : dropped) release_dropped_pool(*p);
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (!pooling()) return CUDAPOOL_PASS(cuCtxDestroy_v2, ctx);
  ReentrancyGuard guard;
  const CUresult r = CUDAPOOL_PASS(cuCtxDestroy_v2, ctx);
  if (r == CUDA_SUCCESS) release_all(drop_context_pools(ctx));
  return r;
}

CUDAPOOL_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (!pooling()) return CUDAPOOL_PASS(cuDevicePrimaryCtxReset_v2, dev);
  ReentrancyGuard guard;
  const CUresult r = CUDAPOOL_PASS(cuDevicePrimaryCtxReset_v2, dev);
  if (r == CUDA_SUCCESS) release_all(drop_primary_pools(dev));
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
      release_all(drop_primary_pools(dev));
    }
  }
  return r;
}
