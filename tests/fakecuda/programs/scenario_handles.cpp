// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_handles.cpp: expandable_handles, under the shim with
// expandable_segments:True, expandable_handle_mb:100 and idle_release_ms in CUDAPOOL_CONF. The
// large pool's 20 MiB pages are backed by driver allocations of up to 5 pages: a 230 MiB block
// after a 20 MiB one takes 12 pages in three cuMemCreate calls (5 + 5 + 2), as many cuMemMap and
// cuMemSetAccess; once freed, the idle-release thread unmaps and releases the three whole (the
// fake refuses a cuMemUnmap that cuts a mapping, and memory it refused stays in use), and the
// device gets every byte back. A cuMemMap that fails at the second handle of three (an injected
// fault): the first is unmapped and released, the program gets the driver's error, and nothing
// stays in use. Not a timing test: it waits up to 5 s for what takes about 1.25 idle_release_ms.
#include <dlfcn.h>

#include <chrono>
#include <thread>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

// Waits up to 5 s for the device's memory in use to come down to `want`; the ms it took.
double wait_for_in_use(const Driver& d, size_t want) {
  const auto start = std::chrono::steady_clock::now();
  while (d.bytes_in_use(0) != want &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  FC_CHECK(d.bytes_in_use(0) == want, "%zu bytes in use after %.0f ms, expected %zu",
           d.bytes_in_use(0), ms, want);
  return ms;
}

}  // namespace

int expandable_handles(const Driver& d, Mode mode) {
  FC_CHECK(mode == Mode::kShim, "expandable_handles runs under the shim only");
  require_conf("expandable_segments:True,expandable_handle_mb:100,idle_release_ms:");
  const size_t page = 20 * kMiB;
  const size_t base = d.bytes_in_use(0);
  const unsigned long long creates = d.calls("cuMemCreate");
  const unsigned long long maps = d.calls("cuMemMap");

  const CUdeviceptr keep = alloc_ok(d, page);  // page 0: keeps the segment
  FC_CHECK(d.calls("cuMemCreate") == creates + 1, "one page took %llu cuMemCreate calls",
           d.calls("cuMemCreate") - creates);
  stamp(keep, page, 0x6b);

  const size_t n = 230 * kMiB;  // 12 pages: handles of 5, 5 and 2
  const CUdeviceptr big = alloc_ok(d, n);
  FC_CHECK(big == keep + page, "the block is not right after the first page");
  FC_CHECK(d.bytes_in_use(0) == base + 13 * page, "%zu bytes in use, expected 13 pages",
           d.bytes_in_use(0) - base);
  FC_CHECK(d.calls("cuMemCreate") == creates + 4 && d.calls("cuMemMap") == maps + 4,
           "12 pages took %llu cuMemCreate and %llu cuMemMap calls, expected 3 each",
           d.calls("cuMemCreate") - creates - 1, d.calls("cuMemMap") - maps - 1);
  stamp(big, n, 0x4a4b);
  FC_CHECK(stamped(big, n, 0x4a4b), "the block does not hold what was written across handles");
  say("230 MiB after a 20 MiB page: 12 pages in 3 driver allocations, written and read back");

  const unsigned long long unmaps = d.calls("cuMemUnmap");
  const unsigned long long releases = d.calls("cuMemRelease");
  FC_OK(d, d.MemFree(big));
  const double ms = wait_for_in_use(d, base + page);
  FC_CHECK(d.calls("cuMemUnmap") == unmaps + 3 && d.calls("cuMemRelease") == releases + 3,
           "the 3 handles went back in %llu cuMemUnmap and %llu cuMemRelease calls",
           d.calls("cuMemUnmap") - unmaps, d.calls("cuMemRelease") - releases);
  FC_CHECK(stamped(keep, page, 0x6b), "the kept page lost what was written");
  say("freed: its 3 handles went back whole after %.0f ms; the first page stays", ms);

  // A fault at the second of three handles: all or nothing.
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  FC_CHECK(lib != nullptr, "libcuda.so.1 is not loaded");
  auto fail_call = reinterpret_cast<int (*)(const char*, unsigned long long, CUresult)>(
      dlsym(lib, "fakecuda_fail_call"));
  FC_CHECK(fail_call != nullptr, "the fake has no fakecuda_fail_call");
  FC_CHECK(fail_call("cuMemMap", 2, CUDA_ERROR_INVALID_VALUE) == 0, "fakecuda_fail_call");
  CUdeviceptr failed = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&failed, n), CUDA_ERROR_INVALID_VALUE);
  FC_CHECK(d.bytes_in_use(0) == base + page,
           "%zu bytes in use after a failed mapping, expected 1 "
           "page",
           d.bytes_in_use(0) - base);
  say("a cuMemMap failing at the second handle: the driver's error, the first handle released");

  // Mapped again in handles of its own, at the same addresses.
  const CUdeviceptr again = alloc_ok(d, n);
  FC_CHECK(again == big, "the same size went elsewhere");
  stamp(again, n, 0x5c5d);
  FC_CHECK(stamped(again, n, 0x5c5d), "the block mapped again does not hold what was written");
  FC_OK(d, d.MemFree(again));
  FC_OK(d, d.MemFree(keep));
  wait_for_in_use(d, base);
  say("every byte back to the device");
  return 0;
}

}  // namespace fakecuda_test
