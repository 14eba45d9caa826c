// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_idle_unmap.cpp: idle_unmap_wait, run with a slow cuMemUnmap
// (FAKECUDA_SLOW=cuMemUnmap:MS). Against the fake alone: a slow cuMemUnmap leaves its pages mapped
// while it sleeps, and other threads' calls are not held behind it (a cuMemMap of those addresses
// fails at once; once the unmap returned, it succeeds). Under the shim (expandable_segments:True
// and idle_release_ms in CUDAPOOL_CONF): a large block is freed while a block before it keeps the
// expandable segment (a segment left with no page goes back whole, its addresses with it), the
// idle-release thread starts unmapping the freed block's pages, and the same size asked for
// meanwhile gets the same addresses, mapped anew and usable (map_pages waits for the thread's
// give-back: CudaBackend::wait_for_unmapping).
// Not a timing test of the shim: the slow call only widens a window that the real driver leaves
// open for microseconds.
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The milliseconds FAKECUDA_SLOW gives cuMemUnmap; the scenario needs them.
unsigned unmap_slow_ms() {
  const char* slow = std::getenv("FAKECUDA_SLOW");
  const char* at = slow != nullptr ? std::strstr(slow, "cuMemUnmap:") : nullptr;
  FC_CHECK(at != nullptr, "FAKECUDA_SLOW is '%s', expected it to name cuMemUnmap:MS",
           slow != nullptr ? slow : "(unset)");
  const unsigned ms =
      static_cast<unsigned>(std::strtoul(at + std::strlen("cuMemUnmap:"), nullptr, 10));
  FC_CHECK(ms >= 100, "cuMemUnmap's delay is %u ms; the scenario wants 100 or more", ms);
  return ms;
}

struct Unmap {
  const Driver* d;
  CUdeviceptr p;
  size_t n;
  CUresult rc = CUDA_ERROR_UNKNOWN;
};

void* unmap_thread(void* arg) {
  auto* u = static_cast<Unmap*>(arg);
  u->rc = u->d->MemUnmap(u->p, u->n);
  return nullptr;
}

int fake_alone(const Driver& d, unsigned slow) {
  const size_t page = 2 * kMiB;
  CUmemAllocationProp prop = device0_pinned();
  CUdeviceptr base = 0;
  FC_OK(d, d.MemAddressReserve(&base, 2 * page, 0, 0, 0));
  CUmemGenericAllocationHandle first = 0, second = 0;
  FC_OK(d, d.MemCreate(&first, page, &prop, 0));
  FC_OK(d, d.MemCreate(&second, page, &prop, 0));
  FC_OK(d, d.MemMap(base, page, 0, first, 0));
  Unmap u{&d, base, page};
  const unsigned long long before = d.calls("cuMemUnmap");
  const Clock::time_point start = Clock::now();
  pthread_t thread;
  FC_CHECK(pthread_create(&thread, nullptr, unmap_thread, &u) == 0, "pthread_create");
  FC_CHECK(calls_exceed(d, "cuMemUnmap", before, 10000),
           "the thread's cuMemUnmap was not counted in 10 s");
  const Clock::time_point map_start = Clock::now();
  FC_EXPECT_RC(d, d.MemMap(base, page, 0, second, 0), CUDA_ERROR_INVALID_VALUE);
  const double map_ms = ms_since(map_start);
  FC_CHECK(map_ms < slow / 2.0,
           "a cuMemMap during the slow cuMemUnmap took %.0f ms: held behind it", map_ms);
  pthread_join(thread, nullptr);
  FC_OK(d, u.rc);
  const double unmap_ms = ms_since(start);
  FC_CHECK(unmap_ms >= slow, "the slow cuMemUnmap took %.0f ms, less than %u", unmap_ms, slow);
  FC_OK(d, d.MemMap(base, page, 0, second, 0));
  say("a cuMemUnmap slowed by %u ms took %.0f ms; a cuMemMap of its pages meanwhile failed in "
      "%.1f ms (not held behind it), and succeeded after it",
      slow, unmap_ms, map_ms);
  FC_OK(d, d.MemUnmap(base, page));
  FC_OK(d, d.MemRelease(first));
  FC_OK(d, d.MemRelease(second));
  FC_OK(d, d.MemAddressFree(base, 2 * page));
  return 0;
}

int under_shim(const Driver& d, unsigned slow) {
  require_conf("expandable_segments:True,idle_release_ms:");
  const size_t page = 20 * kMiB;  // the large pool's page (large_segment_size_mb's default)
  const size_t n = 3 * page;
  const CUdeviceptr keep = alloc_ok(d, page);  // the segment's first page, used to the end
  stamp(keep, page, 0x4b);
  const CUdeviceptr first = alloc_ok(d, n);
  FC_CHECK(first == keep + page, "the block is not right after the kept one in its segment");
  stamp(first, n, 0x1d1e);
  FC_CHECK(stamped(first, n, 0x1d1e), "the first block's stamp");
  const unsigned long long before = d.calls("cuMemUnmap");
  FC_OK(d, d.MemFree(first));
  // Quiet until the idle-release thread is inside its first (slow) cuMemUnmap of those pages.
  FC_CHECK(calls_exceed(d, "cuMemUnmap", before, 10000),
           "the idle-release thread unmapped nothing in 10 s");
  const Clock::time_point start = Clock::now();
  CUdeviceptr again = 0;
  const CUresult rc = d.MemAlloc(&again, n);
  const double alloc_ms = ms_since(start);
  FC_CHECK(rc == CUDA_SUCCESS,
           "cuMemAlloc_v2 of %zu bytes while the idle-release thread unmaps "
           "them returned %s after %.0f ms",
           n, result_name(d, rc).c_str(), alloc_ms);
  FC_CHECK(again == first,
           "the pool mapped other addresses (0x%llx, not 0x%llx): the case does "
           "not reach the addresses being unmapped",
           static_cast<unsigned long long>(again), static_cast<unsigned long long>(first));
  FC_CHECK(d.is_live(again) == 1 && d.is_live(again + n - 1) == 1,
           "the block is not mapped and accessible in the fake");
  stamp(again, n, 0x2a2b);
  FC_CHECK(stamped(again, n, 0x2a2b), "the second block's stamp");
  say("%zu MiB freed, the idle-release thread inside a cuMemUnmap slowed by %u ms: the same size "
      "got the same addresses after %.0f ms (%llu cuMemUnmap calls by then), written and read back",
      n / kMiB, slow, alloc_ms, d.calls("cuMemUnmap") - before);
  FC_OK(d, d.MemFree(again));
  FC_CHECK(stamped(keep, page, 0x4b), "the kept block's stamp");
  FC_OK(d, d.MemFree(keep));
  return 0;
}

}  // namespace

int idle_unmap_wait(const Driver& d, Mode mode) {
  const unsigned slow = unmap_slow_ms();
  return mode == Mode::kFake ? fake_alone(d, slow) : under_shim(d, slow);
}

}  // namespace fakecuda_test
