// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_context_cycles.cpp: context_cycles, a long life of contexts:
// 100,000 context lifetimes one after another (contexts created and destroyed on every device,
// primary context resets a hook sees and resets no hook sees, last releases of the primary
// context), each used for a few allocations (a block still live at its end in some, a non-blocking
// stream with work in some), while a second thread allocates, frees and walks the pools in a
// context of its own. The process's resident size must stay flat: a context's pool must not cost
// memory once the context is gone. Not a check of what the pool hands out beyond the data kept
// (many_contexts and contexts_threads, scenario_contexts.cpp), nor a speed test.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

// Under a sanitizer (the CPU suite's ASan and TSan builds instrument the programs too) resident
// memory measures the sanitizer's own bookkeeping, and a cycle costs ten times as much: fewer
// cycles, for the races and leaks the sanitizer reports, and no bound.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FC_SANITIZED 1
#endif
#endif
#ifdef FC_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
constexpr int kCycles = kSanitized ? 10000 : 100000;
constexpr int kWarmup = 5000;  // allocator arenas, the shim's slots and tables reach their size
// The bound on the growth from cycle kWarmup to the end. The fake driver itself keeps two kinds of
// object for good, counted in the bound at kFakeKeepsPerObject each: a destroyed context's object
// (other threads may still name it) and each event of a dead context (the shim's reuse fences
// record some; the fake's events belong to no context, a real driver frees them with it).
// Measured: 80 bytes of heap each (glibc's chunks for the object and its std::set node), and
// the fake alone grows by 84 bytes per context. Anything else must stay within kSlack: 2 MiB over
// 95,000 cycles, 22 bytes a cycle, for the allocators' page-sized noise. Dropped pools leaked
// about 2.5 KB per context before (230 MB over those cycles); a leak of 40 bytes per cycle fails.
constexpr size_t kFakeKeepsPerObject = 96;
constexpr size_t kSlack = size_t{2} << 20;

size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  FC_CHECK(f != nullptr, "cannot open /proc/self/statm");
  unsigned long pages = 0, resident = 0;
  const int got = std::fscanf(f, "%lu %lu", &pages, &resident);
  std::fclose(f);
  FC_CHECK(got == 2, "cannot read /proc/self/statm");
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// A few allocations in the current context: a block freed and another of its size asked for at
// once (under the shim the pool wants its block back: a reuse fence's epoch closes), data
// checked; `keep_live`: one block is still allocated when the context goes. `stream`: the
// context's non-blocking stream, given work on the freed block before its free (0: none).
void use_context(const Driver& d, int cycle, bool keep_live, CUstream stream) {
  const uint64_t tag = uint64_t(cycle) << 8;
  CUdeviceptr small = alloc_ok(d, 512);
  CUdeviceptr medium = alloc_ok(d, 64 * kKiB);
  stamp(small, 512, tag + 1);
  stamp(medium, 64 * kKiB, tag + 2);
  if (stream != nullptr) FC_OK(d, d.MemsetD8Async(small, 0x5a, 512, stream));
  FC_OK(d, d.MemFree(small));
  CUdeviceptr again = alloc_ok(d, 512);
  stamp(again, 512, tag + 3);
  FC_CHECK(stamped(again, 512, tag + 3) && stamped(medium, 64 * kKiB, tag + 2),
           "cycle %d: a block lost its data", cycle);
  FC_OK(d, d.MemFree(again));
  if (cycle % 64 == 0) {  // now and then a large-pool block too
    CUdeviceptr large = alloc_ok(d, 3 * kMiB);
    stamp(large, 3 * kMiB, tag + 4);
    FC_CHECK(stamped(large, 3 * kMiB, tag + 4), "cycle %d: a large block lost its data", cycle);
    if (!keep_live) FC_OK(d, d.MemFree(large));
  }
  if (!keep_live) FC_OK(d, d.MemFree(medium));
}

}  // namespace

int context_cycles(const Driver& d, Mode mode) {
  int devices = 0;
  FC_OK(d, d.DeviceGetCount(&devices));
  CUcontext primary = current(d);
  std::atomic<bool> done{false};
  std::atomic<long> other_pairs{0};
  // The second thread: its own context, pairs and walks of the pools (cuMemGetInfo, the range of
  // its own block) while the first one's contexts come and go.
  std::thread other([&] {
    CUcontext mine = nullptr;
    FC_OK(d, d.CtxCreate(&mine, nullptr, 0, 0));
    CUdeviceptr kept = alloc_ok(d, 4 * kKiB);
    stamp(kept, 4 * kKiB, 77);
    for (long i = 0; !done.load(std::memory_order_relaxed); ++i) {
      CUdeviceptr p = alloc_ok(d, 4 * kKiB);
      stamp(p, 4 * kKiB, uint64_t(i));
      FC_CHECK(stamped(p, 4 * kKiB, uint64_t(i)), "second thread: a block lost its data");
      FC_OK(d, d.MemFree(p));
      if (i % 16 == 0) {
        size_t free = 0, total = 0;
        FC_OK(d, d.MemGetInfo(&free, &total));
        CUdeviceptr base = 0;
        size_t size = 0;
        FC_OK(d, d.MemGetAddressRange(&base, &size, kept + 100));
        FC_CHECK(base == kept && size == 4 * kKiB, "second thread: the range of its block");
      }
      other_pairs.fetch_add(1, std::memory_order_relaxed);
      // A pause now and then: the fake driver has one lock, which the first thread needs too.
      if (i % 16 == 15) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    FC_CHECK(stamped(kept, 4 * kKiB, 77), "second thread: its kept block lost its data");
    FC_OK(d, d.MemFree(kept));
    FC_OK(d, d.CtxDestroy(mine));
  });
  while (other_pairs.load() == 0) std::this_thread::yield();

  say("%d context lifetimes (created and destroyed on %d devices, primary context resets seen "
      "and unseen, last primary releases), a second thread allocating meanwhile",
      kCycles, devices);
  const auto start = std::chrono::steady_clock::now();
  size_t rss_warm = 0;
  unsigned long long created = 0, created_warm = 0;
  auto events_kept = [&] { return d.calls("cuEventCreate") - d.calls("cuEventDestroy"); };
  unsigned long long events_warm = 0;
  for (int i = 0; i < kCycles; ++i) {
    if (i == kWarmup) {
      rss_warm = resident_bytes();
      created_warm = created;
      events_warm = events_kept();
      say("after %d cycles: resident %zu KiB", i, rss_warm >> 10);
    }
    const bool keep_live = i % 3 == 0;
    switch (i % 8) {
      case 0:
      case 1:
      case 2: {  // a context of its own, on each device in turn
        CUcontext c = nullptr;
        FC_OK(d, d.CtxCreate(&c, nullptr, 0, (i / 8) % devices));
        ++created;
        use_context(d, i, keep_live, nullptr);
        FC_OK(d, d.CtxDestroy(c));
        break;
      }
      case 3: {  // the same with a non-blocking stream that had work (destroyed first)
        CUcontext c = nullptr;
        FC_OK(d, d.CtxCreate(&c, nullptr, 0, 0));
        ++created;
        CUstream s = nullptr;
        FC_OK(d, d.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
        use_context(d, i, keep_live, s);
        FC_OK(d, d.StreamDestroy(s));
        FC_OK(d, d.CtxDestroy(c));
        break;
      }
      case 4:
      case 5:  // the primary context, reset through the hooked entry point
        use_context(d, i, keep_live, nullptr);
        FC_OK(d, d.DevicePrimaryCtxReset(0));
        break;
      case 6:  // reset as cudart's cudaDeviceReset does: no hook sees it
        use_context(d, i, keep_live, nullptr);
        FC_CHECK(d.reset_primary_unseen(0) == 0, "fakecuda_reset_primary_unseen failed");
        break;
      case 7:  // the last release of the primary context, then a new one
        use_context(d, i, keep_live, nullptr);
        FC_OK(d, d.DevicePrimaryCtxRelease(0));
        FC_OK(d, d.DevicePrimaryCtxRetain(&primary, 0));
        FC_OK(d, d.CtxSetCurrent(primary));
        break;
    }
    FC_CHECK(current(d) == primary, "cycle %d: the primary context is not current again", i);
    if (i % 25000 == 0 && i > 0)
      say("after %d cycles: resident %zu KiB", i, resident_bytes() >> 10);
  }
  const size_t rss_end = resident_bytes();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done.store(true);
  other.join();
  const unsigned long long fake_objects = (created - created_warm) + (events_kept() - events_warm);
  const size_t bound = kSlack + fake_objects * kFakeKeepsPerObject;
  const long long growth = static_cast<long long>(rss_end) - static_cast<long long>(rss_warm);
  say("after %d cycles: resident %zu KiB, %+lld KiB since cycle %d (bound %zu KiB: 2 MiB and "
      "%zu bytes for each of the %llu contexts and events the fake driver keeps); %.1f s, %ld "
      "pairs on the second thread",
      kCycles, rss_end >> 10, growth / 1024, kWarmup, bound >> 10, kFakeKeepsPerObject,
      fake_objects, seconds, other_pairs.load());
  if (kSanitized) {
    say("built with a sanitizer: resident memory is not checked");
    return 0;
  }
  FC_CHECK(growth <= static_cast<long long>(bound),
           "resident memory grew by %lld bytes over %d context lifetimes (%lld per context)",
           growth, kCycles - kWarmup, growth / (kCycles - kWarmup));
  (void)mode;  // the fake alone must stay within the same bound
  return 0;
}

}  // namespace fakecuda_test
