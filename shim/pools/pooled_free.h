// SPDX-License-Identifier: Apache-2.0
// shim/pools/pooled_free.h: where a free of a device pointer goes, for cuMemFree_v2 and the
// stream-ordered cuMemFreeAsync alike: the calling thread's cache, the current context's pool,
// any other live pool, or (a pointer inside a pooled segment that is no allocated block: a double
// or interior free) a refusal. Not here: the pass-through of pointers no pool knows (the hooks).
#pragma once

#include <cstdint>

#include "shim/pools/context_registry.h"

namespace cudapool::shim {

enum class PooledFree : std::uint8_t {
  kFreed,      // a pooled block, now free (or kept by the thread's cache)
  kRefused,    // inside a pooled segment but no allocated block: logged, INVALID_VALUE
  kNotPooled,  // no pool knows it: for the driver
};

// current: the current context's pool, or nullptr.
PooledFree free_pooled_pointer(ContextPool* current, std::uintptr_t ptr);

// The free hook's answer for outcome, or false when the driver must answer (kNotPooled).
inline bool pooled_free_answer(PooledFree outcome, CUresult* answer) {
  if (outcome == PooledFree::kNotPooled) return false;
  *answer = outcome == PooledFree::kFreed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  return true;
}

}  // namespace cudapool::shim
