// shim/pools/context_scope.h: makes a context current for a scope when it is not, for the shim's
// own driver calls on a pool's behalf (a free, a fence or a segment call may come from a thread
// whose current context is another one). Restores the previous one at the end of the scope.
#pragma once

#include "shim/interpose/cuda_api.h"
#include "shim/interpose/real_driver.h"

namespace cudapool::shim {

class ContextScope {
 public:
  explicit ContextScope(CUcontext ctx) {
    CUcontext current = nullptr;
    real().cuCtxGetCurrent(&current);
    if (current != ctx && real().cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) pushed_ = true;
  }
  ~ContextScope() {
    if (pushed_) {
      CUcontext ignored = nullptr;
      real().cuCtxPopCurrent_v2(&ignored);
    }
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace cudapool::shim
