// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_basics.cpp: the basic scenarios on device 0's primary
// context: cache_hit/disable (an alloc/free loop), errors (bad sizes, no context, bad frees, out
// of memory), meminfo and address_range, each against the fake alone or under the shim. Not many
// threads, streams or contexts: see scenario_threads.cpp, scenario_streams.cpp,
// scenario_contexts.cpp.
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {

// --- cache_hit / disable ----------------------------------------------------------------------

int alloc_free_loop(const Driver& d, bool pooled) {
  const int kPairs = 1000;
  const size_t kSize = kMiB;
  unsigned long long a0 = d.alloc_calls(), f0 = d.free_calls();
  size_t live0 = d.live_allocations(-1);
  say("%d alloc/free pairs of 1 MiB; expecting %s", kPairs,
      pooled ? "1 driver allocation and 0 driver frees (pool)"
             : "one driver allocation and one driver free per pair");
  CUdeviceptr first = 0;
  int moved = 0;
  std::vector<unsigned char> back(256);
  for (int i = 0; i < kPairs; ++i) {
    CUdeviceptr p = alloc_ok(d, kSize);
    if (i == 0) first = p;
    if (p != first) ++moved;
    // Write through the pointer, read back through the pointer and through the driver.
    std::memset(host(p), i & 0xff, 256);
    std::memset(static_cast<unsigned char*>(host(p)) + kSize - 256, ~i & 0xff, 256);
    FC_OK(d, d.MemcpyDtoH(back.data(), p + kSize - 256, back.size()));
    FC_CHECK(back[0] == (~i & 0xff) && back[255] == (~i & 0xff), "pair %d: read back %u", i,
             back[0]);
    FC_CHECK(static_cast<unsigned char*>(host(p))[255] == (i & 0xff), "pair %d: data lost", i);
    FC_OK(d, d.MemFree(p));
  }
  unsigned long long da = d.alloc_calls() - a0, df = d.free_calls() - f0;
  say("driver saw %llu cuMemAlloc_v2 and %llu cuMemFree_v2; %d pairs got another address than "
      "the first",
      da, df, moved);
  if (pooled) {
    FC_CHECK(da == 1, "the pool must serve 1000 pairs from one driver allocation, saw %llu", da);
    FC_CHECK(df == 0, "the pool must keep the block cached, saw %llu driver frees", df);
    FC_CHECK(d.live_allocations(-1) == live0 + 1, "driver live allocations %zu, expected %zu",
             d.live_allocations(-1), live0 + 1);
  } else {
    FC_CHECK(da == static_cast<unsigned long long>(kPairs),
             "expected %d driver allocations, saw %llu", kPairs, da);
    FC_CHECK(df == static_cast<unsigned long long>(kPairs), "expected %d driver frees, saw %llu",
             kPairs, df);
    FC_CHECK(d.live_allocations(-1) == live0, "driver live allocations %zu, expected %zu",
             d.live_allocations(-1), live0);
  }
  // Data written with the driver's copy is readable through the pointer.
  CUdeviceptr p = alloc_ok(d, kSize);
  std::vector<unsigned char> src(4096);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7);
  FC_OK(d, d.MemcpyHtoD(p + 4096, src.data(), src.size()));
  FC_CHECK(std::memcmp(static_cast<unsigned char*>(host(p)) + 4096, src.data(), src.size()) == 0,
           "cuMemcpyHtoD data not visible through the pointer");
  FC_OK(d, d.MemsetD8(p, 0xab, kSize));
  FC_CHECK(static_cast<unsigned char*>(host(p))[kSize - 1] == 0xab, "cuMemsetD8 did not reach");
  FC_OK(d, d.MemFree(p));
  say("data written through the pointer, cuMemcpyHtoD and cuMemsetD8 read back");
  return 0;
}

// --- errors -----------------------------------------------------------------------------------

int errors(const Driver& d, Mode mode) {
  CUdeviceptr p = 0;
  say("size 0 -> CUDA_ERROR_INVALID_VALUE");
  FC_EXPECT_RC(d, d.MemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);

  say("sizes no device has, up to SIZE_MAX -> CUDA_ERROR_OUT_OF_MEMORY (rounding must not wrap)");
  for (const size_t huge : {SIZE_MAX, SIZE_MAX - 511, size_t{1} << 63, size_t{1} << 48}) {
    FC_EXPECT_RC(d, d.MemAlloc(&p, huge), CUDA_ERROR_OUT_OF_MEMORY);
  }

  say("no current context (a new thread, then a popped context) -> CUDA_ERROR_INVALID_CONTEXT");
  CUresult thread_rc = CUDA_SUCCESS;
  CUcontext thread_ctx = reinterpret_cast<CUcontext>(1);
  std::thread t([&] {
    d.CtxGetCurrent(&thread_ctx);
    CUdeviceptr q = 0;
    thread_rc = d.MemAlloc(&q, kMiB);
  });
  t.join();
  FC_CHECK(thread_ctx == nullptr, "a new thread has a current context");
  FC_EXPECT_RC(d, thread_rc, CUDA_ERROR_INVALID_CONTEXT);
  CUcontext saved = nullptr;
  FC_OK(d, d.CtxPopCurrent(&saved));
  FC_EXPECT_RC(d, d.MemAlloc(&p, kMiB), CUDA_ERROR_INVALID_CONTEXT);
  FC_OK(d, d.CtxPushCurrent(saved));

  say("free of an unknown pointer -> CUDA_ERROR_INVALID_VALUE (the driver's answer)");
  int local = 0;
  FC_EXPECT_RC(d, d.MemFree(reinterpret_cast<CUdeviceptr>(&local)), CUDA_ERROR_INVALID_VALUE);

  say("double free -> CUDA_ERROR_INVALID_VALUE, and the allocator still works");
  p = alloc_ok(d, kMiB);
  FC_OK(d, d.MemFree(p));
  FC_EXPECT_RC(d, d.MemFree(p), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr a = alloc_ok(d, kMiB), b = alloc_ok(d, kMiB);
  FC_CHECK(a != b, "two live blocks share an address after a double free");
  stamp(a, kMiB, 1);
  stamp(b, kMiB, 2);
  FC_CHECK(stamped(a, kMiB, 1) && stamped(b, kMiB, 2), "blocks overlap after a double free");
  FC_OK(d, d.MemFree(a));
  FC_OK(d, d.MemFree(b));

  say("interior-pointer free -> CUDA_ERROR_INVALID_VALUE, the block stays live");
  p = alloc_ok(d, kMiB);
  stamp(p, kMiB, 3);
  FC_EXPECT_RC(d, d.MemFree(p + 256), CUDA_ERROR_INVALID_VALUE);
  FC_CHECK(stamped(p, kMiB, 3), "block data changed after a rejected interior free");
  FC_OK(d, d.MemFree(p));

  size_t capacity = d.capacity(0);
  say("out of memory on a %zu MiB device: allocate 4 MiB blocks until CUDA_ERROR_OUT_OF_MEMORY",
      capacity / kMiB);
  FC_CHECK(capacity <= 256 * kMiB, "run with FAKECUDA_DEVICE_MEMORY at most 256 MiB");
  size_t counts[2] = {0, 0};
  for (size_t& count : counts) {
    std::vector<CUdeviceptr> blocks;
    CUresult rc = CUDA_SUCCESS;
    for (int i = 0; i < 1000; ++i) {
      CUdeviceptr q = 0;
      rc = d.MemAlloc(&q, 4 * kMiB);
      if (rc != CUDA_SUCCESS) break;
      blocks.push_back(q);
    }
    FC_EXPECT_RC(d, rc, CUDA_ERROR_OUT_OF_MEMORY);
    count = blocks.size();
    FC_CHECK(count > 0 && count * 4 * kMiB <= capacity, "%zu blocks of 4 MiB fit in %zu MiB", count,
             capacity / kMiB);
    for (CUdeviceptr q : blocks) FC_OK(d, d.MemFree(q));
    CUdeviceptr q = alloc_ok(d, 4 * kMiB);
    FC_OK(d, d.MemFree(q));
  }
  say("%zu blocks before the first OOM, %zu after freeing all; allocating again succeeds",
      counts[0], counts[1]);
  FC_CHECK(counts[0] == counts[1], "freeing everything must give the memory back");
  if (mode == Mode::kFake) {
    FC_CHECK(d.bytes_in_use(0) == 0, "fake still charges %zu bytes", d.bytes_in_use(0));
  }
  return 0;
}

// --- meminfo ----------------------------------------------------------------------------------

int meminfo(const Driver& d, Mode mode, bool fraction) {
  size_t capacity = d.capacity(0);
  size_t f0 = 0, t0 = 0;
  FC_OK(d, d.MemGetInfo(&f0, &t0));
  size_t want_total = fraction ? capacity / 2 : capacity;
  say("before: free %zu total %zu (capacity %zu; expecting total %zu)", f0, t0, capacity,
      want_total);
  FC_CHECK(t0 == want_total, "total %zu, expected %zu", t0, want_total);
  FC_CHECK(f0 <= t0, "free %zu above total %zu", f0, t0);

  CUdeviceptr p = alloc_ok(d, 8 * kMiB);
  size_t f1 = 0, t1 = 0;
  FC_OK(d, d.MemGetInfo(&f1, &t1));
  say("8 MiB live: free %zu (%zu less)", f1, f0 - f1);
  FC_CHECK(t1 == t0, "total changed to %zu", t1);
  FC_CHECK(f1 <= f0 && f0 - f1 >= 8 * kMiB, "free fell by %zu only", f0 - f1);
  if (mode == Mode::kFake) FC_CHECK(f0 - f1 == 8 * kMiB, "fake: free fell by %zu", f0 - f1);

  FC_OK(d, d.MemFree(p));
  size_t f2 = 0, t2 = 0;
  FC_OK(d, d.MemGetInfo(&f2, &t2));
  say("freed: free %zu (before the allocation: %zu); driver still holds %zu bytes", f2, f0,
      d.bytes_in_use(0));
  FC_CHECK(f2 == f0, "idle cached memory must count as free: %zu != %zu", f2, f0);
  FC_CHECK(t2 == t0, "total changed to %zu", t2);

  size_t only = 0;
  if (mode == Mode::kShim) {
    say("one NULL output is allowed and the other is filled");
    FC_OK(d, d.MemGetInfo(&only, nullptr));
    FC_CHECK(only == f0, "free alone %zu, expected %zu", only, f0);
    FC_OK(d, d.MemGetInfo(nullptr, &only));
    FC_CHECK(only == t0, "total alone %zu, expected %zu", only, t0);
  } else {
    say("NULL outputs -> CUDA_ERROR_INVALID_VALUE (the real driver's answer)");
    FC_EXPECT_RC(d, d.MemGetInfo(&only, nullptr), CUDA_ERROR_INVALID_VALUE);
    FC_EXPECT_RC(d, d.MemGetInfo(nullptr, &only), CUDA_ERROR_INVALID_VALUE);
  }
  return 0;
}

// --- address_range ----------------------------------------------------------------------------

namespace {

void expect_range(const Driver& d, CUdeviceptr ask, CUdeviceptr base, size_t size) {
  CUdeviceptr got_base = 0;
  size_t got_size = 0;
  FC_OK(d, d.MemGetAddressRange(&got_base, &got_size, ask));
  FC_CHECK(got_base == base && got_size == size,
           "cuMemGetAddressRange(base+%llu) = (base%+lld, %zu), expected (base, %zu)",
           static_cast<unsigned long long>(ask - base),
           static_cast<long long>(got_base) - static_cast<long long>(base), got_size, size);
  CUdeviceptr start = 0;
  size_t range = 0;
  FC_OK(d, d.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ask));
  FC_OK(d, d.PointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ask));
  FC_CHECK(start == base && range == size, "RANGE_START_ADDR/RANGE_SIZE = (base%+lld, %zu)",
           static_cast<long long>(start) - static_cast<long long>(base), range);
}

}  // namespace

int address_range(const Driver& d, Mode mode) {
  bool pooled = mode == Mode::kShim;
  auto rounded = [&](size_t n) { return pooled ? (n + 511) / 512 * 512 : n; };
  CUdeviceptr p = alloc_ok(d, 1000);
  CUdeviceptr r = alloc_ok(d, 1000);
  CUdeviceptr q = alloc_ok(d, 3 * kMiB + 1);
  say("1000 B at base and interior -> (base, %zu)", rounded(1000));
  expect_range(d, p, p, rounded(1000));
  expect_range(d, p + 100, p, rounded(1000));
  expect_range(d, p + 999, p, rounded(1000));
  say("a neighbouring 1000 B block has its own range");
  FC_CHECK(r != p, "two live blocks at one address");
  expect_range(d, r + 1, r, rounded(1000));
  say("3 MiB + 1 -> (base, %zu)", rounded(3 * kMiB + 1));
  expect_range(d, q + 4096, q, rounded(3 * kMiB + 1));

  CUdeviceptr only_base = 0;
  FC_OK(d, d.MemGetAddressRange(&only_base, nullptr, p + 10));
  FC_CHECK(only_base == p, "base alone wrong");

  say("cuPointerGetAttributes: context, memory type, device, range");
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  CUcontext ctx = nullptr;
  unsigned type = 0;
  int ordinal = -1;
  CUdeviceptr start = 0;
  size_t size = 0;
  void* data[] = {&ctx, &type, &ordinal, &start, &size};
  FC_OK(d, d.PointerGetAttributes(5, attrs, data, q + 5));
  FC_CHECK(ctx == current(d), "context %p, current %p", static_cast<void*>(ctx),
           static_cast<void*>(current(d)));
  FC_CHECK(type == CU_MEMORYTYPE_DEVICE, "memory type %u", type);
  FC_CHECK(ordinal == 0, "device ordinal %d", ordinal);
  FC_CHECK(start == q && size == rounded(3 * kMiB + 1), "range (base%+lld, %zu)",
           static_cast<long long>(start) - static_cast<long long>(q), size);

  say("an unknown pointer -> CUDA_ERROR_NOT_FOUND / CUDA_ERROR_INVALID_VALUE");
  int local = 0;
  CUdeviceptr stack = reinterpret_cast<CUdeviceptr>(&local);
  FC_EXPECT_RC(d, d.MemGetAddressRange(&start, &size, stack), CUDA_ERROR_NOT_FOUND);
  FC_EXPECT_RC(d, d.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, stack),
               CUDA_ERROR_INVALID_VALUE);

  say("a freed block whose segment p still holds -> CUDA_ERROR_NOT_FOUND, as after a real free");
  FC_OK(d, d.MemFree(r));
  FC_EXPECT_RC(d, d.MemGetAddressRange(&start, &size, r + 1), CUDA_ERROR_NOT_FOUND);

  say("a thread with no current context -> CUDA_ERROR_INVALID_CONTEXT, even for a live block");
  CUresult no_context = CUDA_SUCCESS;
  std::thread([&] { no_context = d.MemGetAddressRange(&start, &size, p); }).join();
  FC_CHECK(no_context == CUDA_ERROR_INVALID_CONTEXT, "cuMemGetAddressRange without a context: %d",
           static_cast<int>(no_context));
  for (CUdeviceptr x : {p, q}) FC_OK(d, d.MemFree(x));
  return 0;
}

}  // namespace fakecuda_test
