// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_contexts.cpp: contexts and what goes with them: hidden_reset and
// reset_releases (primary context resets, seen by a hook or not), many_contexts and
// contexts_threads (more contexts than the shim has pool slots), and ipc (exports of pooled
// blocks). Not the fake's own context API: see scenario_fake_api.cpp.
#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {

// --- hidden_reset -------------------------------------------------------------------------------

// The primary context reset through no exported entry point, as cudart's cudaDeviceReset does:
// the pool's memory is gone with it, and every answer about it must be the driver's.
int hidden_reset(const Driver& d) {
  say("a reset no hook sees: memory info, ranges and frees answer as the driver does");
  CUdeviceptr kept = 0, idle = 0;
  FC_OK(d, d.MemAlloc(&kept, kMiB));
  FC_OK(d, d.MemAlloc(&idle, 64 * kMiB));
  FC_OK(d, d.MemFree(idle));  // cached, under the shim
  FC_CHECK(d.reset_primary_unseen(0) == 0, "fakecuda_reset_primary_unseen failed");
  size_t free = 0, total = 0;
  FC_OK(d, d.MemGetInfo(&free, &total));
  FC_CHECK(free == total, "nothing is allocated after the reset, yet free %zu of %zu", free, total);
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult range = d.MemGetAddressRange(&base, &size, kept);
  FC_CHECK(range == CUDA_ERROR_NOT_FOUND, "range of a pointer from before the reset: %s",
           result_name(d, range).c_str());
  const CUresult freed = d.MemFree(kept);
  FC_CHECK(freed == CUDA_ERROR_INVALID_VALUE, "free of a pointer from before the reset: %s",
           result_name(d, freed).c_str());
  CUdeviceptr fresh = 0;
  FC_OK(d, d.MemAlloc(&fresh, kMiB));
  stamp(fresh, kMiB, 21);
  FC_OK(d, d.MemFree(fresh));

  // The first call after this reset is the export: nothing else may notice the reset first.
  say("after another unseen reset, memory the driver places inside an old segment is exported");
  CUdeviceptr old_segment = 0;
  FC_OK(d, d.MemAlloc(&old_segment, 64 * kMiB));
  FC_OK(d, d.MemFree(old_segment));  // an idle 64 MiB segment, under the shim
  FC_CHECK(d.reset_primary_unseen(0) == 0, "fakecuda_reset_primary_unseen failed");
  const CUdeviceptr inside = old_segment + 2 * kMiB;
  FC_CHECK(d.place_next_alloc(inside) == 0, "fakecuda_place_next_alloc failed");
  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  FC_OK(d, d.MemAllocPitch(&pitched, &pitch, 4096, 1024, 4));
  FC_CHECK(pitched == inside, "pitched memory at 0x%llx, not where it was placed",
           static_cast<unsigned long long>(pitched));
  CUipcMemHandle ipc{};
  const CUresult exported = d.IpcGetMemHandle(&ipc, pitched);
  FC_CHECK(exported == CUDA_SUCCESS, "export of new memory inside a dead segment: %s",
           result_name(d, exported).c_str());
  FC_OK(d, d.MemFree(pitched));
  return 0;
}

// --- reset_releases -----------------------------------------------------------------------------

// A context reset takes cuMemAlloc memory with it but not cuMemCreate memory (measured on the
// H200: a cudaDeviceReset under expandable_segments:True left the 1 GiB the shim cached
// allocated). Under the shim nothing it cached may stay allocated after a reset, whether a hook
// saw the reset or not. `vmm`: the shim must serve through cuMemCreate (expandable segments).
int reset_releases(const Driver& d, Mode mode, bool vmm) {
  if (mode == Mode::kFake) {
    say("the fake, as the driver: cuMemCreate memory outlives a primary context reset");
    const CUmemAllocationProp prop = device0_pinned();
    CUmemGenericAllocationHandle h = 0;
    FC_OK(d, d.MemCreate(&h, 2 * kMiB, &prop, 0));
    FC_OK(d, d.DevicePrimaryCtxReset(0));
    FC_CHECK(d.bytes_in_use(0) == 2 * kMiB, "%zu bytes in use after the reset, want 2 MiB",
             d.bytes_in_use(0));
    FC_OK(d, d.MemRelease(h));
  }
  for (const bool seen : {true, false}) {
    say(seen ? "cuDevicePrimaryCtxReset: everything cached goes back"
             : "a reset no hook sees, found at the next cuMemGetInfo: everything cached goes back");
    CUdeviceptr kept = alloc_ok(d, 3 * kMiB);
    CUdeviceptr idle = alloc_ok(d, 64 * kMiB);
    FC_OK(d, d.MemFree(idle));
    if (mode == Mode::kShim && vmm) {
      FC_CHECK(d.calls("cuMemCreate") > 0, "expandable segments asked for, but no cuMemCreate");
    }
    if (seen) {
      FC_OK(d, d.DevicePrimaryCtxReset(0));
    } else {
      FC_CHECK(d.reset_primary_unseen(0) == 0, "fakecuda_reset_primary_unseen failed");
    }
    size_t free = 0, total = 0;
    FC_OK(d, d.MemGetInfo(&free, &total));
    FC_CHECK(d.bytes_in_use(0) == 0, "%zu bytes still allocated after the reset",
             d.bytes_in_use(0));
    FC_CHECK(free == total, "free %zu of %zu after the reset", free, total);
    FC_CHECK(!d.is_live(kept), "a block from before the reset is still mapped");
  }
  CUdeviceptr again = alloc_ok(d, 64 * kMiB);
  stamp(again, 64 * kMiB, 5);
  FC_CHECK(stamped(again, 64 * kMiB, 5), "new memory after the resets lost its data");
  FC_OK(d, d.MemFree(again));
  return 0;
}

// --- many_contexts ------------------------------------------------------------------------------

// More contexts over the process's life than the shim has pool slots (256): created and destroyed
// contexts, primary context resets a hook sees, and resets no hook sees (cudart's
// cudaDeviceReset), each used for a few allocations with one block still live when it goes. Every
// allocation must succeed and keep its data, nothing may stay allocated, and the last context must
// still be pooled.
int many_contexts(const Driver& d, Mode mode) {
  constexpr int kCycles = 300;
  const CUcontext primary = current(d);
  say("%d created contexts, each destroyed with a block live", kCycles);
  for (int i = 0; i < kCycles; ++i) {
    CUcontext c = nullptr;
    FC_OK(d, d.CtxCreate(&c, nullptr, 0, 0));
    CUdeviceptr freed = alloc_ok(d, kMiB);
    FC_OK(d, d.MemFree(freed));
    CUdeviceptr live = alloc_ok(d, kMiB);
    stamp(live, kMiB, i);
    FC_CHECK(stamped(live, kMiB, i), "context %d: a block lost its data", i);
    FC_OK(d, d.CtxDestroy(c));
    FC_CHECK(current(d) == primary, "context %d: the primary context is not current again", i);
  }
  FC_CHECK(d.bytes_in_use(0) == 0, "%zu bytes still allocated after the contexts went",
           d.bytes_in_use(0));
  say("%d primary context resets, every other one seen by no hook", kCycles);
  for (int i = 0; i < kCycles; ++i) {
    CUdeviceptr live = alloc_ok(d, 3 * kMiB);
    stamp(live, 3 * kMiB, i);
    FC_CHECK(stamped(live, 3 * kMiB, i), "reset %d: a block lost its data", i);
    if (i % 2 == 0) {
      FC_OK(d, d.DevicePrimaryCtxReset(0));
    } else {
      FC_CHECK(d.reset_primary_unseen(0) == 0, "fakecuda_reset_primary_unseen failed");
    }
  }
  size_t free = 0, total = 0;
  FC_OK(d, d.MemGetInfo(&free, &total));
  FC_CHECK(free == total, "free %zu of %zu after the last reset", free, total);
  say("%d contexts alive at once (the shim pools 256, the rest go to the driver)", kCycles);
  std::vector<std::pair<CUcontext, CUdeviceptr>> alive;
  const unsigned long long f0 = d.free_calls();
  for (int i = 0; i < kCycles; ++i) {
    CUcontext c = nullptr;
    FC_OK(d, d.CtxCreate(&c, nullptr, 0, 0));
    CUdeviceptr p = alloc_ok(d, kMiB);
    stamp(p, kMiB, i);
    alive.emplace_back(c, p);
    CUcontext popped = nullptr;
    FC_OK(d, d.CtxPopCurrent(&popped));
  }
  for (int i = kCycles - 1; i >= 0; --i) {
    FC_OK(d, d.CtxPushCurrent(alive[i].first));
    FC_CHECK(stamped(alive[i].second, kMiB, i), "context %d: a block lost its data", i);
    FC_OK(d, d.MemFree(alive[i].second));
    FC_OK(d, d.CtxDestroy(alive[i].first));
  }
  FC_CHECK(current(d) == primary, "the primary context is not current again");
  FC_CHECK(d.bytes_in_use(0) == 0, "%zu bytes still allocated after the contexts went",
           d.bytes_in_use(0));
  // Under the shim only the frees of the contexts beyond the pooled ones reach the driver (the
  // primary context's pool may hold a slot, or may have been found dead and dropped).
  const unsigned long long driver_frees = d.free_calls() - f0;
  say("%llu of the %d frees reached the driver", driver_frees, kCycles);
  if (mode == Mode::kShim) {
    FC_CHECK(driver_frees >= kCycles - 256 && driver_frees <= kCycles - 255,
             "%llu frees reached the driver", driver_frees);
  } else {
    FC_CHECK(driver_frees == kCycles, "%llu frees reached the driver", driver_frees);
  }
  say("the context in use after all that is still pooled");
  // cuMemAlloc segments, or (expandable segments) cuMemCreate pages.
  auto driver_allocations = [&] { return d.alloc_calls() + d.calls("cuMemCreate"); };
  const unsigned long long a0 = driver_allocations();
  for (int i = 0; i < 100; ++i) FC_OK(d, d.MemFree(alloc_ok(d, kMiB)));
  const unsigned long long driver_allocs = driver_allocations() - a0;
  say("100 pairs of 1 MiB: %llu driver allocations", driver_allocs);
  FC_CHECK(driver_allocs == (mode == Mode::kShim ? 1u : 100u),
           "100 pairs made %llu driver allocations", driver_allocs);
  return 0;
}

// --- contexts_threads ---------------------------------------------------------------------------

// Threads that each make, use and destroy contexts of their own, again and again, while another
// thread walks the pools (cuMemGetInfo, an address range, frees of a pointer no pool owns): more
// contexts over the run than the shim has pool slots, slots taken over while others read them.
int contexts_threads(const Driver& d) {
  constexpr int kThreads = 6, kRounds = 150, kPairs = 20;
  const size_t kSizes[] = {512, 65536, kMiB, 3 * kMiB};
  const CUcontext primary = current(d);
  std::atomic<bool> done{false};
  std::atomic<long> walks{0};
  say("%d threads x %d contexts made, used (%d checked pairs, a block live at the end) and "
      "destroyed, while a thread walks the pools",
      kThreads, kRounds, kPairs);
  std::thread walker([&] {
    FC_OK(d, d.CtxSetCurrent(primary));
    int local = 0;
    const auto unowned = reinterpret_cast<CUdeviceptr>(&local);
    while (!done.load()) {
      size_t free = 0, total = 0;
      FC_OK(d, d.MemGetInfo(&free, &total));
      CUdeviceptr base = 0;
      size_t size = 0;
      FC_CHECK(d.MemGetAddressRange(&base, &size, unowned) != CUDA_SUCCESS,
               "a range for a host address");
      FC_EXPECT_RC(d, d.MemFree(unowned), CUDA_ERROR_INVALID_VALUE);
      walks.fetch_add(1);
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        CUcontext c = nullptr;
        FC_OK(d, d.CtxCreate(&c, nullptr, 0, 0));
        for (int i = 0; i < kPairs; ++i) {
          const size_t n = kSizes[(i + t) % 4];
          const uint64_t tag = (uint64_t(t) << 32) | uint64_t(r * kPairs + i);
          CUdeviceptr p = alloc_ok(d, n);
          stamp(p, n, tag);
          FC_CHECK(stamped(p, n, tag), "thread %d context %d: a block lost its data", t, r);
          FC_OK(d, d.MemFree(p));
        }
        CUdeviceptr live = alloc_ok(d, kMiB);
        stamp(live, kMiB, uint64_t(t) * 1000 + uint64_t(r));
        FC_CHECK(stamped(live, kMiB, uint64_t(t) * 1000 + uint64_t(r)),
                 "thread %d context %d: the live block lost its data", t, r);
        FC_OK(d, d.CtxDestroy(c));
      }
    });
  }
  for (std::thread& w : workers) w.join();
  done.store(true);
  walker.join();
  say("%d contexts, %ld walks; %zu bytes allocated at the end", kThreads * kRounds, walks.load(),
      d.bytes_in_use(0));
  FC_CHECK(d.bytes_in_use(0) == 0, "%zu bytes still allocated after every context went",
           d.bytes_in_use(0));
  return 0;
}

// --- ipc ----------------------------------------------------------------------------------------

// cuIpcGetMemHandle names a whole driver allocation: the importer maps its base. Under the shim a
// block may lie inside a pooled segment, and exporting it would map other memory in the importer:
// refused with CUDA_ERROR_INVALID_VALUE. A block that starts its segment exports as it would
// without the shim. An expandable segment's pages are no cuMemAlloc allocation: nothing in one
// exports. `expandable`: the shim runs with expandable_segments:True.
int ipc(const Driver& d, Mode mode, bool expandable) {
  const bool shim = mode == Mode::kShim;
  const CUresult whole = shim && expandable ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  const CUresult inside = shim ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  CUipcMemHandle handle{};
  say("a block alone in its segment: %s", result_name(d, whole).c_str());
  const CUdeviceptr big = alloc_ok(d, 64 * kMiB);
  FC_EXPECT_RC(d, d.IpcGetMemHandle(&handle, big), whole);
  say("two small blocks of one segment: the first %s, the second %s", result_name(d, whole).c_str(),
      result_name(d, inside).c_str());
  const CUdeviceptr first = alloc_ok(d, 512);
  const CUdeviceptr second = alloc_ok(d, 512);
  if (shim) FC_CHECK(second == first + 512, "the pool did not split one segment for both");
  FC_EXPECT_RC(d, d.IpcGetMemHandle(&handle, first), whole);
  FC_EXPECT_RC(d, d.IpcGetMemHandle(&handle, second), inside);
  say("a host address: the driver's CUDA_ERROR_INVALID_VALUE");
  int local = 0;
  FC_EXPECT_RC(d, d.IpcGetMemHandle(&handle, reinterpret_cast<CUdeviceptr>(&local)),
               CUDA_ERROR_INVALID_VALUE);
  for (CUdeviceptr p : {big, first, second}) FC_OK(d, d.MemFree(p));
  return 0;
}

}  // namespace fakecuda_test
