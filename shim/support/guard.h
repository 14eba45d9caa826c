// SPDX-License-Identifier: Apache-2.0
// shim/support/guard.h: a thread-local re-entrancy guard. While the shim itself runs on a thread
// (its initialization, its own driver calls), hooks reached again on that thread pass straight
// through.
#pragma once

namespace cudapool::shim {

inline thread_local int t_shim_depth = 0;

class ReentrancyGuard {
 public:
  ReentrancyGuard() { ++t_shim_depth; }
  ~ReentrancyGuard() { --t_shim_depth; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;
};

inline bool inside_shim() {
  return t_shim_depth > 0;
}

}  // namespace cudapool::shim
