// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_threads.cpp: scenarios about who calls: threads (many threads
// allocating and freeing at once), two_devices (a pool per device) and fork (the child after a
// fork). Not contexts made and destroyed by threads: see scenario_contexts.cpp (contexts_threads).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {

// --- threads ----------------------------------------------------------------------------------

int threads(const Driver& d, Mode mode) {
  const int kThreads = 8, kSteps = 2000;
  const size_t kSizes[] = {1,        100,  512,      1000,     4096,         65536,   500000,
                           kMiB - 1, kMiB, kMiB + 1, 2 * kMiB, 3 * kMiB + 7, 4 * kMiB};
  size_t live0 = d.live_allocations(-1), bytes0 = d.bytes_in_use(-1);
  unsigned long long a0 = d.alloc_calls(), f0 = d.free_calls();
  std::mutex mu;
  std::map<uintptr_t, size_t> ranges;  // live blocks of all threads
  auto add = [&](CUdeviceptr p, size_t n) {
    std::lock_guard<std::mutex> lock(mu);
    auto next = ranges.lower_bound(p);
    FC_CHECK(next == ranges.end() || next->first >= p + n, "block %#llx+%zu overlaps %#lx",
             static_cast<unsigned long long>(p), n, static_cast<unsigned long>(next->first));
    if (next != ranges.begin()) {
      auto prev = std::prev(next);
      FC_CHECK(prev->first + prev->second <= p, "block %#llx overlaps %#lx+%zu",
               static_cast<unsigned long long>(p), static_cast<unsigned long>(prev->first),
               prev->second);
    }
    ranges.emplace(p, n);
  };
  auto remove = [&](CUdeviceptr p) {
    std::lock_guard<std::mutex> lock(mu);
    ranges.erase(p);
  };
  say("%d threads x %d steps of alloc/free, sizes 1 B .. 4 MiB, patterns checked, ranges disjoint",
      kThreads, kSteps);
  CUcontext ctx = current(d);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      FC_OK(d, d.CtxSetCurrent(ctx));
      uint64_t rng = 0x5eed0000ull + static_cast<uint64_t>(t);
      struct Held {
        CUdeviceptr p;
        size_t n;
        uint64_t tag;
      };
      std::vector<Held> held;
      auto drop = [&](size_t i) {
        FC_CHECK(stamped(held[i].p, held[i].n, held[i].tag), "thread %d: block %#llx+%zu corrupted",
                 t, static_cast<unsigned long long>(held[i].p), held[i].n);
        remove(held[i].p);
        FC_OK(d, d.MemFree(held[i].p));
        held[i] = held.back();
        held.pop_back();
      };
      for (int step = 0; step < kSteps; ++step) {
        uint64_t r = splitmix(&rng);
        if (held.size() < 6 && (held.empty() || (r & 1) != 0)) {
          size_t n = kSizes[(r >> 8) % (sizeof(kSizes) / sizeof(kSizes[0]))];
          CUdeviceptr p = alloc_ok(d, n);
          add(p, n);
          uint64_t tag = (static_cast<uint64_t>(t) << 48) | static_cast<uint64_t>(step) | 1;
          stamp(p, n, tag);
          held.push_back({p, n, tag});
        } else {
          drop((r >> 8) % held.size());
        }
      }
      while (!held.empty()) drop(held.size() - 1);
    });
  }
  for (std::thread& t : pool) t.join();
  FC_CHECK(ranges.empty(), "%zu ranges left", ranges.size());
  unsigned long long da = d.alloc_calls() - a0, df = d.free_calls() - f0;
  size_t live = d.live_allocations(-1) - live0, bytes = d.bytes_in_use(-1) - bytes0;
  say("driver: %llu allocations, %llu frees, %zu live allocations holding %zu bytes", da, df, live,
      bytes);
  FC_CHECK(da - df == live, "driver calls (%llu - %llu) disagree with live allocations %zu", da, df,
           live);
  if (mode == Mode::kFake) {
    FC_CHECK(live == 0 && bytes == 0, "fake: everything was freed");
  } else {
    size_t f = 0, total = 0;
    FC_OK(d, d.MemGetInfo(&f, &total));
    say("shim reports free %zu of %zu with everything freed (driver holds %zu cached)", f, total,
        bytes);
    FC_CHECK(da < static_cast<unsigned long long>(kThreads * kSteps) / 4,
             "the pool should serve most requests from its cache (%llu driver allocations)", da);
    FC_CHECK(f == total, "cached idle memory must be reported free");
  }
  return 0;
}

// --- two_devices ------------------------------------------------------------------------------

int two_devices(const Driver& d, Mode mode) {
  bool pooled = mode == Mode::kShim;
  FC_CHECK(d.device_count() >= 2, "needs FAKECUDA_DEVICES >= 2");
  CUdevice dev0 = 0, dev1 = 0;
  FC_OK(d, d.DeviceGet(&dev0, 0));
  FC_OK(d, d.DeviceGet(&dev1, 1));
  CUcontext c0 = nullptr, c1 = nullptr;
  FC_OK(d, d.DevicePrimaryCtxRetain(&c0, dev0));
  FC_OK(d, d.DevicePrimaryCtxRetain(&c1, dev1));
  FC_CHECK(c0 != c1, "one primary context for two devices");

  FC_OK(d, d.CtxSetCurrent(c0));
  CUdeviceptr a0 = alloc_ok(d, kMiB);
  FC_OK(d, d.CtxSetCurrent(c1));
  CUdevice on = -1;
  FC_OK(d, d.CtxGetDevice(&on));
  FC_CHECK(on == 1, "current device %d", on);
  CUdeviceptr a1 = alloc_ok(d, kMiB);
  int ordinal = -1;
  FC_OK(d, d.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a1));
  say("1 MiB on device 0 and on device 1 (driver: devices %d and %d)", d.device_of(a0),
      d.device_of(a1));
  FC_CHECK(d.device_of(a0) == 0 && d.device_of(a1) == 1 && ordinal == 1,
           "blocks on the wrong devices");
  size_t l0 = d.live_allocations(0), l1 = d.live_allocations(1);

  say("free both while device 0 is current");
  FC_OK(d, d.CtxSetCurrent(c0));
  FC_OK(d, d.MemFree(a0));
  FC_OK(d, d.MemFree(a1));
  say("driver live allocations: device 0 %zu -> %zu, device 1 %zu -> %zu", l0,
      d.live_allocations(0), l1, d.live_allocations(1));
  if (pooled) {
    FC_CHECK(d.live_allocations(0) == l0 && d.live_allocations(1) == l1,
             "each pool keeps its segment cached");
  } else {
    FC_CHECK(d.live_allocations(0) == l0 - 1 && d.live_allocations(1) == l1 - 1,
             "fake: each free reached its device");
  }

  unsigned long long calls0 = d.alloc_calls();
  CUdeviceptr b0 = alloc_ok(d, kMiB), b0b = alloc_ok(d, kMiB);
  say("two 1 MiB on device 0: devices %d and %d", d.device_of(b0), d.device_of(b0b));
  FC_CHECK(d.device_of(b0) == 0 && d.device_of(b0b) == 0, "device 0 got device 1 memory");
  FC_OK(d, d.CtxSetCurrent(c1));
  CUdeviceptr b1 = alloc_ok(d, kMiB);
  FC_CHECK(d.device_of(b1) == 1, "device 1 got device %d memory", d.device_of(b1));
  if (pooled) {
    FC_CHECK(b0 != a1 && b0b != a1, "a block of device 1 was reused on device 0");
    FC_CHECK(b0 == a0, "device 0's freed block was not reused");
    FC_CHECK(b1 == a1, "device 1's freed block was not reused on device 1");
    FC_CHECK(d.alloc_calls() == calls0, "reuse should need no driver allocation (%llu)",
             d.alloc_calls() - calls0);
    say("device 0 reused its block, device 1 reused its own, no driver allocation");
  }
  FC_OK(d, d.MemFree(b1));
  FC_OK(d, d.CtxSetCurrent(c0));
  FC_OK(d, d.MemFree(b0));
  FC_OK(d, d.MemFree(b0b));
  return 0;
}

// --- fork -------------------------------------------------------------------------------------

int fork_scenario(const Driver& d, Mode mode) {
  CUdeviceptr p = alloc_ok(d, kMiB);
  stamp(p, kMiB, 0xf0f0);
  say("allocated 1 MiB, forking");
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  FC_CHECK(pid >= 0, "fork failed");
  if (pid == 0) {
    unsigned long long a0 = d.alloc_calls(), f0 = d.free_calls();
    for (int i = 0; i < 10; ++i) {
      CUdeviceptr q = alloc_ok(d, kMiB);
      stamp(q, kMiB, static_cast<uint64_t>(i));
      FC_CHECK(stamped(q, kMiB, static_cast<uint64_t>(i)), "child: data lost");
      FC_OK(d, d.MemFree(q));
    }
    unsigned long long da = d.alloc_calls() - a0, df = d.free_calls() - f0;
    say("child: 10 alloc/free pairs reached the driver as %llu allocations and %llu frees", da, df);
    FC_CHECK(da == 10 && df == 10, "child: every call must reach the driver (pool off after fork)");
    FC_CHECK(stamped(p, kMiB, 0xf0f0), "child: the parent's block content is not inherited");
    std::fflush(stdout);
    std::exit(0);
  }
  int status = 0;
  FC_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
  FC_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (status %#x)", status);
  say("child exited 0");
  FC_CHECK(stamped(p, kMiB, 0xf0f0), "parent: block content changed");
  FC_OK(d, d.MemFree(p));
  unsigned long long a0 = d.alloc_calls();
  CUdeviceptr q = alloc_ok(d, kMiB);
  FC_OK(d, d.MemFree(q));
  unsigned long long da = d.alloc_calls() - a0;
  say("parent: free + alloc after the fork took %llu driver allocations", da);
  if (mode == Mode::kShim) FC_CHECK(da == 0, "the parent's pool must still serve from its cache");
  return 0;
}

}  // namespace fakecuda_test
