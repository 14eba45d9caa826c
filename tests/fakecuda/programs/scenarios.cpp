// tests/fakecuda/programs/scenarios.cpp: the scenarios that cudart_like and lcuda_program run,
// each against the fake alone ("fake": the answers the real driver gives) or under the shim
// ("shim": the caching pool's behaviour, seen through the fake's counters). Each prints what it
// checks; the first failed check exits 1. Not a place for shim internals: only what a program and
// the driver can observe.
#include "scenarios.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace fakecuda_test {

// --- helpers, shared with the other scenario files (declared in scenarios.h) -------------------

void say(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::fputs("  ", stdout);
  std::vfprintf(stdout, fmt, args);
  std::fputc('\n', stdout);
  va_end(args);
  std::fflush(stdout);
}

CUdeviceptr alloc_ok(const Driver& d, size_t n) {
  CUdeviceptr p = 0;
  FC_OK(d, d.MemAlloc(&p, n));
  FC_CHECK(p != 0, "cuMemAlloc_v2(%zu) returned a null pointer", n);
  return p;
}

void* host(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

void stamp(CUdeviceptr p, size_t n, uint64_t tag) {
  auto* bytes = static_cast<unsigned char*>(host(p));
  if (n <= 4 * kKiB) {
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(tag + i);
    return;
  }
  for (size_t off : {size_t{0}, n / 2, n - 8}) std::memcpy(bytes + off, &tag, 8);
}

bool stamped(CUdeviceptr p, size_t n, uint64_t tag) {
  const auto* bytes = static_cast<const unsigned char*>(host(p));
  if (n <= 4 * kKiB) {
    for (size_t i = 0; i < n; ++i) {
      if (bytes[i] != static_cast<unsigned char>(tag + i)) return false;
    }
    return true;
  }
  for (size_t off : {size_t{0}, n / 2, n - 8}) {
    if (std::memcmp(bytes + off, &tag, 8) != 0) return false;
  }
  return true;
}

uint64_t splitmix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

CUcontext current(const Driver& d) {
  CUcontext ctx = nullptr;
  FC_OK(d, d.CtxGetCurrent(&ctx));
  return ctx;
}

CUmemAllocationProp device0_pinned() {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

namespace {

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

// --- streams_fence ----------------------------------------------------------------------------

int streams_fake(const Driver& d) {
  CUstream s = nullptr;
  FC_OK(d, d.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned flags = 0;
  FC_OK(d, d.StreamGetFlags(s, &flags));
  FC_CHECK(flags == CU_STREAM_NON_BLOCKING, "flags %u", flags);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  FC_OK(d, d.StreamIsCapturing(s, &capture));
  FC_CHECK(capture == CU_STREAM_CAPTURE_STATUS_NONE, "capturing");
  CUevent e = nullptr, e2 = nullptr;
  FC_OK(d, d.EventCreate(&e, CU_EVENT_DISABLE_TIMING));
  FC_OK(d, d.EventCreate(&e2, 0));

  say("unheld stream: recorded events are complete");
  FC_OK(d, d.EventRecord(e, s));
  FC_OK(d, d.EventQuery(e));
  FC_OK(d, d.StreamQuery(s));

  say("held stream: events stay incomplete until a synchronize; each synchronize counts");
  FC_CHECK(d.hold_stream(s, 1) == 0, "hold failed");
  unsigned long long s0 = d.sync_count();
  FC_OK(d, d.EventRecord(e, s));
  FC_OK(d, d.EventRecord(e2, s));
  FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
  FC_EXPECT_RC(d, d.StreamQuery(s), CUDA_ERROR_NOT_READY);
  FC_OK(d, d.StreamWaitEvent(nullptr, e, 0));
  FC_OK(d, d.EventSynchronize(e));
  FC_CHECK(d.sync_count() == s0 + 1, "sync count %llu", d.sync_count() - s0);
  FC_OK(d, d.EventQuery(e));
  FC_EXPECT_RC(d, d.EventQuery(e2), CUDA_ERROR_NOT_READY);  // recorded later: still queued
  FC_OK(d, d.StreamSynchronize(s));
  FC_OK(d, d.EventQuery(e2));
  FC_OK(d, d.StreamQuery(s));
  FC_OK(d, d.EventRecord(e, s));
  FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
  FC_OK(d, d.CtxSynchronize());
  FC_OK(d, d.EventQuery(e));
  FC_CHECK(d.sync_count() == s0 + 3, "sync count %llu", d.sync_count() - s0);

  say("releasing the hold completes queued events without a sync");
  FC_OK(d, d.EventRecord(e, s));
  FC_CHECK(d.hold_stream(s, 0) == 0, "release failed");
  FC_OK(d, d.EventQuery(e));
  FC_CHECK(d.sync_count() == s0 + 3, "release counted a sync");

  say("the default stream (0) can be held too; priority streams work");
  FC_CHECK(d.hold_stream(nullptr, 1) == 0, "hold of stream 0 failed");
  FC_OK(d, d.EventRecord(e, nullptr));
  FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
  FC_CHECK(d.hold_stream(nullptr, 0) == 0, "release of stream 0 failed");
  FC_OK(d, d.EventQuery(e));
  CUstream prio = nullptr;
  FC_OK(d, d.StreamCreateWithPriority(&prio, CU_STREAM_NON_BLOCKING, -1));
  FC_OK(d, d.StreamSynchronize(prio));
  FC_OK(d, d.StreamDestroy(prio));
  FC_EXPECT_RC(d, d.StreamQuery(prio), CUDA_ERROR_INVALID_HANDLE);
  FC_CHECK(d.hold_stream(prio, 1) == -1, "hold of a destroyed stream accepted");

  FC_OK(d, d.EventDestroy(e));
  FC_OK(d, d.EventDestroy(e2));
  FC_OK(d, d.StreamDestroy(s));
  return 0;
}

int streams_shim(const Driver& d, const std::string& fence) {
  CUstream s = nullptr;
  d.reset_counters();
  FC_OK(d, d.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  // reuse_fence:auto orders a new non-blocking stream after the work queued before it (blocks
  // freed with no fence may go to it): one event on the legacy stream, one wait on the new stream.
  const unsigned long long waits = d.calls("cuStreamWaitEvent") + d.calls("cuStreamWaitEvent_ptsz");
  say("creating a non-blocking stream: %llu stream wait(s) on a legacy-stream event", waits);
  FC_CHECK(waits == (fence == "auto" ? 1u : 0u), "reuse_fence:%s: %llu stream waits at creation",
           fence.c_str(), waits);
  CUevent e = nullptr;
  FC_OK(d, d.EventCreate(&e, CU_EVENT_DISABLE_TIMING));
  FC_CHECK(d.hold_stream(s, 1) == 0, "hold failed");
  say("reuse_fence:%s; a non-blocking stream with GPU work still queued (held)", fence.c_str());

  if (fence == "sync") {
    say("every free synchronizes the context: sync count +1 per free, block reusable at once");
    CUdeviceptr last = 0;
    for (int i = 0; i < 10; ++i) {
      CUdeviceptr p = alloc_ok(d, kMiB);
      if (i > 0) FC_CHECK(p == last, "free %d: block not reused after a synchronizing free", i);
      FC_OK(d, d.MemsetD8Async(p, 1, kMiB, s));
      FC_OK(d, d.EventRecord(e, s));
      unsigned long long before = d.sync_count();
      FC_OK(d, d.MemFree(p));
      unsigned long long grew = d.sync_count() - before;
      FC_CHECK(grew == 1, "free %d: sync count grew by %llu", i, grew);
      FC_OK(d, d.EventQuery(e));
      last = p;
    }
  } else {
    CUdeviceptr p = alloc_ok(d, kMiB);
    FC_OK(d, d.MemsetD8Async(p, 1, kMiB, s));  // the in-flight use
    FC_OK(d, d.EventRecord(e, s));
    FC_EXPECT_RC(d, d.EventQuery(e), CUDA_ERROR_NOT_READY);
    FC_OK(d, d.MemFree(p));
    CUdeviceptr q = alloc_ok(d, kMiB);
    say("freed %#llx, next allocation %#llx", static_cast<unsigned long long>(p),
        static_cast<unsigned long long>(q));
    std::vector<CUdeviceptr> keep = {q};
    if (fence == "none") {
      FC_CHECK(q == p, "reuse_fence:none must hand the block out again at once");
    } else {
      FC_CHECK(q != p, "a block freed while its stream has queued work was reused");
      FC_CHECK(d.hold_stream(s, 0) == 0, "release failed");
      say("work done (hold released): a later allocation may reuse it");
      bool reused = false;
      for (int i = 0; i < 4 && !reused; ++i) {
        CUdeviceptr r = alloc_ok(d, kMiB);
        keep.push_back(r);
        reused = r == p;
      }
      FC_CHECK(reused, "the block was never reused after its stream finished");
    }
    for (CUdeviceptr x : keep) FC_OK(d, d.MemFree(x));
  }
  d.hold_stream(s, 0);
  FC_OK(d, d.EventDestroy(e));
  FC_OK(d, d.StreamDestroy(s));
  return 0;
}

// --- passthrough ------------------------------------------------------------------------------

int passthrough(const Driver& d) {
  const char* names[] = {"cuMemAllocManaged",
                         "cuMemAllocPitch_v2",
                         d.alloc_async_name.c_str(),
                         d.free_async_name.c_str(),
                         "cuMemAllocHost_v2",
                         "cuMemHostAlloc",
                         "cuMemFreeHost",
                         "cuMemCreate",
                         "cuMemMap",
                         d.alloc_from_pool_name.c_str()};
  const size_t kNames = sizeof(names) / sizeof(names[0]);
  unsigned long long before[kNames];
  for (size_t i = 0; i < kNames; ++i) before[i] = d.calls(names[i]);
  unsigned long long a0 = d.alloc_calls(), f0 = d.free_calls();

  say("managed, pitched, stream-ordered, pinned host and VMM allocations reach the driver");
  CUdeviceptr managed = 0, pitched = 0, async = 0;
  FC_OK(d, d.MemAllocManaged(&managed, kMiB, CU_MEM_ATTACH_GLOBAL));
  stamp(managed, kMiB, 11);
  size_t pitch = 0;
  FC_OK(d, d.MemAllocPitch(&pitched, &pitch, 1000, 10, 4));
  FC_CHECK(pitch >= 1000, "pitch %zu", pitch);
  stamp(pitched, pitch * 10, 12);
  FC_OK(d, d.MemAllocAsync(&async, kMiB, nullptr));
  stamp(async, kMiB, 13);
  FC_CHECK(d.is_live(managed) && d.is_live(pitched) && d.is_live(async),
           "the driver does not know these allocations");
  FC_OK(d, d.MemFreeAsync(async, nullptr));
  CUdeviceptr from_pool = 0;  // the fake does not model pools: any handle
  FC_OK(d, d.MemAllocFromPoolAsync(&from_pool, kMiB, reinterpret_cast<CUmemoryPool>(1), nullptr));
  stamp(from_pool, kMiB, 15);
  FC_CHECK(d.is_live(from_pool), "the driver does not know the pool allocation");
  FC_OK(d, d.MemFreeAsync(from_pool, nullptr));
  void* h1 = nullptr;
  void* h2 = nullptr;
  FC_OK(d, d.MemAllocHost(&h1, 4096));
  FC_OK(d, d.MemHostAlloc(&h2, 4096, CU_MEMHOSTALLOC_PORTABLE));
  std::memset(h1, 1, 4096);
  std::memset(h2, 2, 4096);
  FC_OK(d, d.MemFreeHost(h1));
  FC_OK(d, d.MemFreeHost(h2));

  const CUmemAllocationProp prop = device0_pinned();
  size_t granularity = 0;
  FC_OK(d, d.MemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr va = 0;
  FC_OK(d, d.MemAddressReserve(&va, 2 * granularity, 0, 0, 0));
  CUmemGenericAllocationHandle handle = 0;
  FC_OK(d, d.MemCreate(&handle, granularity, &prop, 0));
  FC_OK(d, d.MemMap(va, granularity, 0, handle, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  FC_OK(d, d.MemSetAccess(va, granularity, &access, 1));
  stamp(va, granularity, 14);
  FC_OK(d, d.MemUnmap(va, granularity));
  FC_OK(d, d.MemRelease(handle));
  FC_OK(d, d.MemAddressFree(va, 2 * granularity));

  for (size_t i = 0; i < kNames; ++i) {
    unsigned long long delta = d.calls(names[i]) - before[i];
    unsigned long long want = std::strcmp(names[i], "cuMemFreeHost") == 0 ? 2 : 1;
    if (names[i] == d.free_async_name) want = 2;
    say("%-22s reached the driver %llu time(s)", names[i], delta);
    FC_CHECK(delta == want, "%s: expected %llu call(s) in the driver", names[i], want);
  }
  FC_CHECK(d.alloc_calls() == a0, "these must not turn into cuMemAlloc_v2 (%llu)",
           d.alloc_calls() - a0);

  say("cuMemFree_v2 of managed and pitched memory reaches the driver");
  FC_OK(d, d.MemFree(managed));
  FC_OK(d, d.MemFree(pitched));
  FC_CHECK(d.free_calls() - f0 == 2, "%llu driver frees", d.free_calls() - f0);
  FC_CHECK(!d.is_live(managed) && !d.is_live(pitched), "still live in the driver");
  return 0;
}

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

// --- fake_api: the fake's own contract, without the shim ----------------------------------------

int fake_api(const Driver& d) {
  int version = 0;
  FC_OK(d, d.DriverGetVersion(&version));
  FC_CHECK(version == CUDA_VERSION, "driver version %d", version);
  int count = 0;
  FC_OK(d, d.DeviceGetCount(&count));
  FC_CHECK(count == d.device_count() && count >= 1, "device count %d", count);
  char name[64] = {};
  FC_OK(d, d.DeviceGetName(name, sizeof name, 0));
  size_t total = 0;
  FC_OK(d, d.DeviceTotalMem(&total, 0));
  FC_CHECK(total == d.capacity(0), "total memory %zu", total);
  int major = 0;
  FC_OK(d, d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  FC_EXPECT_RC(d, d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_MAX, 0),
               CUDA_ERROR_INVALID_VALUE);
  FC_EXPECT_RC(d, d.DeviceGetName(name, sizeof name, count), CUDA_ERROR_INVALID_DEVICE);
  say("%d devices, \"%s\", %zu bytes, compute capability %d", count, name, total, major);

  say("alignment: 512 B below 2 MiB, 2 MiB from 2 MiB on");
  CUdeviceptr small = alloc_ok(d, 1), big = alloc_ok(d, 2 * kMiB + 1);
  FC_CHECK(small % 512 == 0 && big % (2 * kMiB) == 0, "misaligned");
  FC_OK(d, d.MemFree(small));
  FC_OK(d, d.MemFree(big));

  FC_CHECK(d.place_next_alloc(3 * kMiB) == -1,
           "fakecuda_place_next_alloc took a misaligned address");
  say("fakecuda_fail_next_alloc(2): two OOMs, then success");
  d.fail_next_alloc(2);
  CUdeviceptr p = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  p = alloc_ok(d, 4096);

  say("memset/memcpy stay inside allocations");
  FC_OK(d, d.MemsetD8(p, 7, 4096));
  FC_EXPECT_RC(d, d.MemsetD8(p, 7, 4097), CUDA_ERROR_INVALID_VALUE);
  unsigned char buf[16] = {};
  FC_OK(d, d.MemcpyDtoH(buf, p + 4080, 16));
  FC_CHECK(buf[15] == 7, "memset lost");
  FC_EXPECT_RC(d, d.MemcpyDtoH(buf, p + 4090, 16), CUDA_ERROR_INVALID_VALUE);
  FC_EXPECT_RC(d, d.MemcpyHtoD(reinterpret_cast<CUdeviceptr>(buf), buf, 16),
               CUDA_ERROR_INVALID_VALUE);

  say("capacity: fakecuda_set_capacity bounds allocations and cuMemGetInfo_v2");
  size_t capacity = d.capacity(0);
  FC_CHECK(d.set_capacity(0, 16 * kMiB) == 0, "set_capacity failed");
  CUdeviceptr q = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&q, 17 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  size_t f = 0, t = 0;
  FC_OK(d, d.MemGetInfo(&f, &t));
  FC_CHECK(t == 16 * kMiB && f == 16 * kMiB - 4096, "info (%zu, %zu)", f, t);
  FC_CHECK(d.set_capacity(0, capacity) == 0, "restore failed");
  FC_OK(d, d.MemFree(p));

  say("context stack: pop leaves no context, push restores it");
  CUcontext c0 = current(d);
  CUcontext popped = nullptr;
  FC_OK(d, d.CtxPopCurrent(&popped));
  FC_CHECK(popped == c0, "popped another context");
  FC_CHECK(current(d) == nullptr, "a context is still current");
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_INVALID_CONTEXT);
  FC_EXPECT_RC(d, d.CtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
  FC_OK(d, d.CtxPushCurrent(c0));

  say("a created context on device 1 owns its allocations");
  CUcontext c = nullptr;
  FC_OK(d, d.CtxCreate(&c, nullptr, 0, 1));
  FC_CHECK(current(d) == c, "cuCtxCreate did not make it current");
  CUdevice dev = -1;
  FC_OK(d, d.CtxGetDevice(&dev));
  FC_CHECK(dev == 1, "device %d", dev);
  CUdeviceptr x = alloc_ok(d, kMiB);
  FC_CHECK(d.device_of(x) == 1, "allocated on device %d", d.device_of(x));
  FC_OK(d, d.CtxDestroy(c));
  FC_CHECK(!d.is_live(x), "destroying a context must free its memory");
  FC_CHECK(current(d) == c0, "the destroyed context is still current");
  FC_EXPECT_RC(d, d.CtxDestroy(c), CUDA_ERROR_INVALID_CONTEXT);

  say("cuDevicePrimaryCtxReset frees the primary context's memory");
  CUdeviceptr y = alloc_ok(d, kMiB);
  FC_OK(d, d.DevicePrimaryCtxReset(0));
  FC_CHECK(!d.is_live(y), "reset kept an allocation");
  y = alloc_ok(d, kMiB);
  FC_OK(d, d.MemFree(y));

  say("VMM: reserve, create, map, access, data survives remapping, release");
  const CUmemAllocationProp prop = device0_pinned();
  size_t g = 0;
  FC_OK(d, d.MemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  FC_CHECK(g == 2 * kMiB, "granularity %zu", g);
  CUdeviceptr va = 0;
  FC_OK(d, d.MemAddressReserve(&va, 4 * g, 0, 0, 0));
  FC_CHECK(va % g == 0, "reservation misaligned");
  size_t used0 = d.bytes_in_use(0);
  CUmemGenericAllocationHandle h = 0;
  FC_OK(d, d.MemCreate(&h, 2 * g, &prop, 0));
  FC_CHECK(d.bytes_in_use(0) == used0 + 2 * g, "cuMemCreate not charged");
  FC_OK(d, d.MemMap(va + g, 2 * g, 0, h, 0));
  FC_EXPECT_RC(d, d.MemsetD8(va + g, 1, 16), CUDA_ERROR_INVALID_VALUE);  // no access yet
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  FC_OK(d, d.MemSetAccess(va + g, 2 * g, &access, 1));
  stamp(va + g, 2 * g, 77);
  CUdeviceptr base = 0;
  size_t size = 0;
  FC_OK(d, d.MemGetAddressRange(&base, &size, va + g + 5));
  FC_CHECK(base == va + g && size == 2 * g, "mapping range");
  FC_EXPECT_RC(d, d.MemAddressFree(va, 4 * g), CUDA_ERROR_INVALID_VALUE);  // still mapped
  FC_OK(d, d.MemUnmap(va + g, 2 * g));
  FC_CHECK(!d.is_live(va + g), "unmapped range still live");
  FC_OK(d, d.MemMap(va, 2 * g, 0, h, 0));
  FC_OK(d, d.MemSetAccess(va, 2 * g, &access, 1));
  FC_CHECK(stamped(va, 2 * g, 77), "physical memory lost its data across unmap/map");
  FC_OK(d, d.MemRelease(h));
  FC_CHECK(d.bytes_in_use(0) == used0 + 2 * g, "released while mapped");
  FC_OK(d, d.MemUnmap(va, 2 * g));
  FC_CHECK(d.bytes_in_use(0) == used0, "not freed at the last unmap after release");
  FC_OK(d, d.MemAddressFree(va, 4 * g));

  say("IPC handles, pinned host memory, attributes of unknown pointers");
  CUipcMemHandle ipc;
  p = alloc_ok(d, kMiB);
  FC_OK(d, d.IpcGetMemHandle(&ipc, p));
  int local = 0;
  CUdeviceptr stack = reinterpret_cast<CUdeviceptr>(&local);
  FC_EXPECT_RC(d, d.IpcGetMemHandle(&ipc, stack), CUDA_ERROR_INVALID_VALUE);
  FC_OK(d, d.MemFree(p));
  void* hp = nullptr;
  FC_OK(d, d.MemAllocHost(&hp, 100));
  unsigned type = 0;
  FC_OK(d, d.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 reinterpret_cast<CUdeviceptr>(hp)));
  FC_CHECK(type == CU_MEMORYTYPE_HOST, "memory type %u", type);
  FC_OK(d, d.MemFreeHost(hp));
  FC_EXPECT_RC(d, d.MemFreeHost(hp), CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  CUcontext ctx = c0;
  int ordinal = 0;
  type = 9;
  void* data[] = {&ctx, &type, &ordinal};
  FC_OK(d, d.PointerGetAttributes(3, attrs, data, stack));
  FC_CHECK(ctx == nullptr && type == 0 && ordinal == -2, "defaults (%p, %u, %d)",
           static_cast<void*>(ctx), type, ordinal);
  FC_EXPECT_RC(d, d.MemAllocManaged(&p, 4096, 4), CUDA_ERROR_INVALID_VALUE);
  size_t pitch = 0;
  FC_EXPECT_RC(d, d.MemAllocPitch(&p, &pitch, 100, 2, 3), CUDA_ERROR_INVALID_VALUE);

  say("error names; counters and their reset");
  const char* text = nullptr;
  FC_OK(d, d.GetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text));
  FC_CHECK(std::strcmp(text, "CUDA_ERROR_OUT_OF_MEMORY") == 0, "name %s", text);
  FC_EXPECT_RC(d, d.GetErrorName(static_cast<CUresult>(12345), &text), CUDA_ERROR_INVALID_VALUE);
  FC_CHECK(d.calls("cuDeviceGetName") >= 2 && d.alloc_calls() > 0, "counters");
  d.reset_counters();
  FC_CHECK(d.calls("cuDeviceGetName") == 0 && d.alloc_calls() == 0 && d.sync_count() == 0, "reset");
  FC_CHECK(d.live_allocations(-1) == 0 && d.bytes_in_use(-1) == 0, "leaks: %zu allocations",
           d.live_allocations(-1));
  return 0;
}

}  // namespace

[[noreturn]] void fail(const char* file, int line, const std::string& what) {
  std::fflush(stdout);
  const char* base = std::strrchr(file, '/');
  std::fprintf(stderr, "FAIL (%s:%d): %s\n", base ? base + 1 : file, line, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

std::string result_name(const Driver& d, CUresult rc) {
  const char* name = nullptr;
  if (d.GetErrorName != nullptr && d.GetErrorName(rc, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return "CUresult " + std::to_string(static_cast<int>(rc));
}

void check_before_init(const Driver& d, Mode mode) {
  int version = 0;
  FC_OK(d, d.DriverGetVersion(&version));
  if (mode != Mode::kFake) return;
  say("before cuInit: calls fail with CUDA_ERROR_NOT_INITIALIZED, cuDriverGetVersion works (%d)",
      version);
  int count = 0;
  FC_EXPECT_RC(d, d.DeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CUdeviceptr p = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_NOT_INITIALIZED);
  CUcontext ctx = nullptr;
  FC_EXPECT_RC(d, d.CtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
}

int run_scenario(const Driver& d, const std::string& scenario, Mode mode) {
  bool shim = mode == Mode::kShim;
  const std::map<std::string, std::function<int()>> scenarios = {
      {"cache_hit", [&] { return alloc_free_loop(d, shim); }},
      {"disable", [&] { return alloc_free_loop(d, false); }},
      {"errors", [&] { return errors(d, mode); }},
      {"meminfo", [&] { return meminfo(d, mode, false); }},
      {"meminfo_fraction", [&] { return meminfo(d, mode, true); }},
      {"address_range", [&] { return address_range(d, mode); }},
      {"threads", [&] { return threads(d, mode); }},
      {"two_devices", [&] { return two_devices(d, mode); }},
      {"fork", [&] { return fork_scenario(d, mode); }},
      {"streams_fence", [&] { return shim ? streams_shim(d, "auto") : streams_fake(d); }},
      {"streams_fence_none", [&] { return streams_shim(d, "none"); }},
      {"streams_fence_sync", [&] { return streams_shim(d, "sync"); }},
      // The same checks with the shim's per-thread caches forced on (thread_cache:always).
      {"threads_tc", [&] { return threads(d, mode); }},
      {"errors_tc", [&] { return errors(d, mode); }},
      {"streams_fence_tc", [&] { return shim ? streams_shim(d, "auto") : streams_fake(d); }},
      {"streams_fence_none_tc", [&] { return streams_shim(d, "none"); }},
      {"fork_tc", [&] { return fork_scenario(d, mode); }},
      {"two_devices_tc", [&] { return two_devices(d, mode); }},
      {"cache_hit_tc", [&] { return alloc_free_loop(d, shim); }},
      // scenario_thread_cache.cpp: the caches themselves, and the same checks with them off.
      {"thread_cache", [&] { return thread_cache(d, mode, "thread_cache:always", true); }},
      {"thread_cache_never", [&] { return thread_cache(d, mode, "thread_cache:never", false); }},
      {"thread_cache_auto", [&] { return thread_cache_auto(d, mode); }},
      {"thread_cache_summary", [&] { return thread_cache(d, mode, "thread_cache:always", false); }},
      {"passthrough", [&] { return passthrough(d); }},
      {"hidden_reset", [&] { return hidden_reset(d); }},
      {"reset_releases", [&] { return reset_releases(d, mode, false); }},
      {"many_contexts", [&] { return many_contexts(d, mode); }},
      {"many_contexts_tc", [&] { return many_contexts(d, mode); }},
      {"address_range_tc", [&] { return address_range(d, mode); }},
      {"many_contexts_expandable", [&] { return many_contexts(d, mode); }},
      {"contexts_threads", [&] { return contexts_threads(d); }},
      {"contexts_threads_tc", [&] { return contexts_threads(d); }},
      {"contexts_threads_expandable", [&] { return contexts_threads(d); }},
      {"ipc", [&] { return ipc(d, mode, false); }},
      {"ipc_expandable", [&] { return ipc(d, mode, true); }},
      // Scenarios again with expandable segments (the virtual memory API behind the pool).
      {"reset_releases_expandable", [&] { return reset_releases(d, mode, true); }},
      {"errors_expandable", [&] { return errors(d, mode); }},
      {"meminfo_expandable", [&] { return meminfo(d, mode, false); }},
      {"threads_expandable", [&] { return threads(d, mode); }},
      {"two_devices_expandable", [&] { return two_devices(d, mode); }},
      {"streams_fence_expandable",
       [&] { return shim ? streams_shim(d, "auto") : streams_fake(d); }},
      {"fork_expandable", [&] { return fork_scenario(d, mode); }},
      {"address_range_expandable", [&] { return address_range(d, mode); }},
      {"fake_api", [&] { return fake_api(d); }},
      // scenario_fences.cpp: the shortcuts of reuse_fence:auto.
      {"fence_shortcuts", [&] { return fence_shortcuts(d, mode, false); }},
      {"fence_shortcuts_tc", [&] { return fence_shortcuts(d, mode, true); }},
      {"fence_shortcuts_expandable", [&] { return fence_shortcuts(d, mode, false); }},
      {"oom_explained", [&] { return oom_explained(d, mode); }},
  };
  auto it = scenarios.find(scenario);
  if (it == scenarios.end()) {
    std::fprintf(stderr, "unknown scenario '%s'; known:", scenario.c_str());
    for (const auto& [name, run] : scenarios) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  int rc = it->second();
  if (rc == 0) std::printf("PASS %s\n", scenario.c_str());
  std::fflush(stdout);
  return rc;
}

int program_main(const Driver& d, int argc, char** argv, const char* program) {
  if (argc != 3 || (std::strcmp(argv[2], "shim") != 0 && std::strcmp(argv[2], "fake") != 0)) {
    std::fprintf(stderr, "usage: %s <scenario> shim|fake\n", program);
    return 2;
  }
  Mode mode = std::strcmp(argv[2], "shim") == 0 ? Mode::kShim : Mode::kFake;
  check_before_init(d, mode);
  FC_OK(d, d.Init(0));
  CUdevice dev = 0;
  FC_OK(d, d.DeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  FC_OK(d, d.DevicePrimaryCtxRetain(&ctx, dev));
  FC_OK(d, d.CtxSetCurrent(ctx));
  return run_scenario(d, argv[1], mode);
}

}  // namespace fakecuda_test
