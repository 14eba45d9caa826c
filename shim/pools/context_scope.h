// SPDX-License-Identifier: Apache-2.0
// shim/pools/context_scope.h: makes a context current for a scope when it is not, for the shim's
// own driver calls on a pool's behalf (a free, a fence or a segment call may come from a thread
// whose current context is another one). Restores the previous one at the end of the scope.
#pragma once

#include "shim/driver/cuda_api.h"
#include "shim/driver/real_driver.h"

namespace cudapool::shim {

class ContextScope {
 public:
  // A push or pop that fails is tried once more: a pop that failed would leave the pool's context
  // current in the program's thread (found by tests/fakecuda/fault_sweep.sh: the program's next
  // allocation went to another context's pool, and its block with that context), a push that
  // failed would run the shim's call in the program's context.
  explicit ContextScope(CUcontext ctx) {
    CUcontext current = nullptr;
    real().cuCtxGetCurrent(&current);
    if (current == ctx) return;
    pushed_ = real().cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS ||
              real().cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    if (!pushed_) return;
    CUcontext ignored = nullptr;
    if (real().cuCtxPopCurrent_v2(&ignored) != CUDA_SUCCESS) real().cuCtxPopCurrent_v2(&ignored);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace cudapool::shim
