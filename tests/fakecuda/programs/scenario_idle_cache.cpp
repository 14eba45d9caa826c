// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_idle_cache.cpp: idle_thread_cache, under the shim with
// thread_cache:always and idle_release_ms in CUDAPOOL_CONF. A block the program freed stays in its
// thread's cache, allocated as far as the pool knows; once the cache has gone unused for a while
// the idle-release thread hands it back to the pool (thread_cache_idle_tick), and its segment goes
// back to the device like any other idle memory. Before, a thread's cache kept its blocks, and
// their segments, for the life of the thread. Not a timing test: it waits up to 5 s for what takes
// about three idle_release_ms.
#include <chrono>
#include <thread>

#include "scenarios.h"

namespace fakecuda_test {

int idle_thread_cache(const Driver& d, Mode mode) {
  FC_CHECK(mode == Mode::kShim, "idle_thread_cache runs under the shim only");
  require_conf("thread_cache:always,idle_release_ms:");
  const size_t n = 4 * kMiB;  // a large-pool block, kept by a thread's cache (at most 8 MiB)
  const size_t base = d.bytes_in_use(0);

  say("a block freed is kept by the thread's cache: the same block comes back");
  const CUdeviceptr p = alloc_ok(d, n);
  FC_OK(d, d.MemFree(p));
  const unsigned long long allocs = d.calls("cuMemAlloc_v2");
  const CUdeviceptr again = alloc_ok(d, n);
  FC_CHECK(again == p, "the cache did not keep the block");
  FC_CHECK(d.calls("cuMemAlloc_v2") == allocs, "the driver was asked");
  FC_OK(d, d.MemFree(again));
  FC_CHECK(d.bytes_in_use(0) > base, "no segment in use after the first allocation");

  say("left unused, it goes back to the pool and its segment to the device");
  const auto start = std::chrono::steady_clock::now();
  while (d.bytes_in_use(0) > base &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  FC_CHECK(d.bytes_in_use(0) == base, "%zu bytes still in use after %.0f ms",
           d.bytes_in_use(0) - base, ms);
  say("given back after %.0f ms", ms);

  say("the next allocation gets new memory, and the cache works as before");
  const CUdeviceptr q = alloc_ok(d, n);
  stamp(q, n, 0x1d1e);
  FC_CHECK(stamped(q, n, 0x1d1e), "the new block does not hold what was written");
  FC_OK(d, d.MemFree(q));
  const CUdeviceptr r = alloc_ok(d, n);
  FC_CHECK(r == q, "the cache did not keep the new block");
  FC_OK(d, d.MemFree(r));
  return 0;
}

}  // namespace fakecuda_test
