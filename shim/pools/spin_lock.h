// SPDX-License-Identifier: Apache-2.0
// shim/pools/spin_lock.h: the lock of a context pool. Its critical sections are short (a cache hit
// is a few hundred instructions), so waiting threads spin briefly before yielding instead of
// sleeping in the kernel: with std::mutex, 16 threads allocating at once spent their time in futex
// hand-offs. A lock held across a slow driver call (a new segment) makes waiters yield after the
// spin.
#pragma once

#include <sched.h>

#include <atomic>

namespace cudapool::shim {

class SpinLock {
 public:
  void lock() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 128) {
          __builtin_ia32_pause();
        } else {
          sched_yield();
        }
      }
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace cudapool::shim
