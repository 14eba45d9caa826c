// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_thread_cache.cpp: the `thread_cache` scenarios, run under the
// shim only. They check what a program can see of the shim's per-thread caches of freed blocks
// (conf key thread_cache): with the caches on (thread_cache:always, no reporting), a block freed by
// the thread that allocated it comes back to that thread and no other, until the thread exits or
// memory runs out; with them off (thread_cache:never, or reporting on) every free goes back to the
// shared pool at once. Both are checked by the same steps (a-j) with different expectations; error
// answers (cuMemFree_v2 and cuMemFreeAsync), cuMemGetInfo_v2, out-of-memory recovery and data
// integrity are the same either way. Not checked here: how many blocks and bytes a cache keeps
// (only that blocks over 8 MiB skip it), the reuse-fence condition (the streams_fence_tc case), and
// anything only the shim's internals could tell. `thread_cache_auto` checks that `auto` keeps the
// caches off for one thread and turns them on once four threads contend for the pool's lock
// (given up to 20 s: contention is not deterministic).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {
namespace {

// A thread with the context current that runs one task at a time for the caller, so that a check
// can interleave steps of several live threads in a fixed order. Destroying it (or exit()) ends
// the thread and joins it.
class Worker {
 public:
  Worker(const Driver& d, CUcontext ctx) : thread_([this, &d, ctx] { loop(d, ctx); }) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { exit(); }

  // Runs fn on the worker thread and returns when it is done.
  void run(const std::function<void()>& fn) {
    std::unique_lock<std::mutex> lock(mu_);
    task_ = &fn;
    cv_.notify_all();
    cv_.wait(lock, [&] { return task_ == nullptr; });
  }

  // Ends the thread (its thread-local state is gone once this returns).
  void exit() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void loop(const Driver& d, CUcontext ctx) {
    FC_OK(d, d.CtxSetCurrent(ctx));
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return task_ != nullptr || quit_; });
      if (task_ == nullptr) return;
      const std::function<void()>* fn = task_;
      lock.unlock();
      (*fn)();
      lock.lock();
      task_ = nullptr;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()>* task_ = nullptr;
  bool quit_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// Stamps each block with a tag of its own, then checks that every block kept its tag: no two of
// the blocks overlap. `what` names them in the failure.
struct Span {
  CUdeviceptr ptr;
  size_t bytes;
};
void expect_apart(std::initializer_list<Span> blocks, const char* what) {
  static uint64_t calls = 0;
  const uint64_t base = 0x100 * ++calls;
  uint64_t tag = base;
  for (const Span& b : blocks) stamp(b.ptr, b.bytes, ++tag);
  tag = base;
  for (const Span& b : blocks) {
    ++tag;
    FC_CHECK(stamped(b.ptr, b.bytes, tag), "%s: the block at %#llx lost its tag (blocks overlap)",
             what, b.ptr);
  }
}

// Thread A allocates `bytes` and frees it (its cache keeps the block, when caches are on).
CUdeviceptr allocated_and_freed_by(Worker& a, const Driver& d, size_t bytes) {
  CUdeviceptr x = 0;
  a.run([&] {
    x = alloc_ok(d, bytes);
    FC_OK(d, d.MemFree(x));
  });
  return x;
}

// a. A thread that frees a block and asks for the same rounded size again gets it back.
void same_thread_reuse(const Driver& d, CUcontext ctx, bool cached) {
  say("a. same thread: alloc 1 MiB (X), free, alloc 1 MiB -> X, without a driver allocation");
  Worker a(d, ctx);
  a.run([&] {
    CUdeviceptr x = alloc_ok(d, kMiB);
    unsigned long long a0 = d.alloc_calls();
    FC_OK(d, d.MemFree(x));
    CUdeviceptr y = alloc_ok(d, kMiB);
    FC_CHECK(y == x, "a: the second 1 MiB request got %#llx, expected the freed block X %#llx", y,
             x);
    FC_CHECK(d.alloc_calls() == a0, "a: %llu driver allocations for the reuse, expected 0",
             d.alloc_calls() - a0);
    FC_OK(d, d.MemFree(y));

    say("   a request that rounds to the same size (1 MiB - 511 B) gets X too");
    CUdeviceptr z = alloc_ok(d, kMiB - 511);
    FC_CHECK(z == x, "a: 1 MiB - 511 B got %#llx, expected X %#llx (same 512-byte rounded size)", z,
             x);
    FC_CHECK(d.alloc_calls() == a0, "a: %llu driver allocations, expected 0", d.alloc_calls() - a0);
    FC_OK(d, d.MemFree(z));

    say("   X1, X2 freed in that order come back %s",
        cached ? "X2 first (last in, first out from the thread's cache)"
               : "X1 first (the pool merged them; best fit splits at the start)");
    CUdeviceptr x1 = alloc_ok(d, kMiB), x2 = alloc_ok(d, kMiB);
    FC_CHECK(x1 != x2, "a: two live blocks at %#llx", x1);
    FC_OK(d, d.MemFree(x1));
    FC_OK(d, d.MemFree(x2));
    CUdeviceptr first = alloc_ok(d, kMiB), second = alloc_ok(d, kMiB);
    CUdeviceptr want_first = cached ? x2 : x1, want_second = cached ? x1 : x2;
    FC_CHECK(first == want_first && second == want_second,
             "a: got %#llx then %#llx, expected %#llx then %#llx (X1 %#llx, X2 %#llx)", first,
             second, want_first, want_second, x1, x2);
    FC_CHECK(d.alloc_calls() == a0, "a: %llu driver allocations, expected 0", d.alloc_calls() - a0);
    FC_OK(d, d.MemFree(first));
    FC_OK(d, d.MemFree(second));

    if (cached) {
      say("   a different size (512 KiB) is not served from the cached 1 MiB block");
      CUdeviceptr w = alloc_ok(d, kMiB);
      FC_OK(d, d.MemFree(w));
      CUdeviceptr half = alloc_ok(d, 512 * kKiB);
      FC_CHECK(half != w, "a: a 512 KiB request got the cached 1 MiB block %#llx", w);
      FC_OK(d, d.MemFree(half));
    }
  });
}

// b. A block in one thread's cache is not handed to another thread.
void privacy(const Driver& d, CUcontext ctx, bool cached) {
  say("b. privacy: A allocates and frees 1 MiB (X) and stays alive; B's 1 MiB request gets %s",
      cached ? "another block (X sits in A's cache)" : "X (back in the shared pool)");
  Worker a(d, ctx), b(d, ctx);
  const CUdeviceptr x = allocated_and_freed_by(a, d, kMiB);
  CUdeviceptr y = 0, z = 0;
  unsigned long long a0 = d.alloc_calls();
  b.run([&] { y = alloc_ok(d, kMiB); });
  if (cached) {
    FC_CHECK(y != x, "b: B got X %#llx, which A freed into its own cache", x);
  } else {
    FC_CHECK(y == x, "b: B got %#llx, expected X %#llx (the pool's best fit)", y, x);
  }
  FC_CHECK(d.alloc_calls() == a0,
           "b: B's request took %llu driver allocations, expected 0 (X's segment has room)",
           d.alloc_calls() - a0);

  say("   A's next 1 MiB request gets %s",
      cached ? "X back from its cache" : "another block (B holds X)");
  a.run([&] { z = alloc_ok(d, kMiB); });
  if (cached) {
    FC_CHECK(z == x, "b: A got %#llx, expected X %#llx from its cache", z, x);
  } else {
    FC_CHECK(z != x, "b: A got X %#llx, which B holds", x);
  }
  FC_CHECK(z != y, "b: A and B both hold %#llx", z);
  FC_CHECK(d.alloc_calls() == a0, "b: %llu driver allocations, expected 0", d.alloc_calls() - a0);
  expect_apart({{y, kMiB}, {z, kMiB}}, "b: B's and A's blocks");
  b.run([&] { FC_OK(d, d.MemFree(y)); });
  a.run([&] { FC_OK(d, d.MemFree(z)); });
}

// c. A thread's cached blocks go back to the pool when it exits.
void thread_exit(const Driver& d, CUcontext ctx) {
  say("c. thread exit: A allocates and frees 1 MiB (X) and exits; B's 1 MiB request gets X");
  CUdeviceptr x = 0;
  {
    Worker a(d, ctx);
    x = allocated_and_freed_by(a, d, kMiB);
  }
  unsigned long long a0 = d.alloc_calls();
  Worker b(d, ctx);
  b.run([&] {
    CUdeviceptr y = alloc_ok(d, kMiB);
    FC_CHECK(y == x, "c: B got %#llx, expected X %#llx (A's cache returned to the pool at exit)", y,
             x);
    FC_CHECK(d.alloc_calls() == a0, "c: %llu driver allocations, expected 0", d.alloc_calls() - a0);
    FC_OK(d, d.MemFree(y));
  });

  say("   A allocates 1 MiB (X) and exits holding it; B frees X -> CUDA_SUCCESS, again -> "
      "CUDA_ERROR_INVALID_VALUE");
  {
    Worker a(d, ctx);
    a.run([&] {
      x = alloc_ok(d, kMiB);
      stamp(x, kMiB, 0xc1);
    });
  }
  FC_CHECK(stamped(x, kMiB, 0xc1), "c: the live block %#llx changed when its thread exited", x);
  b.run([&] {
    FC_EXPECT_RC(d, d.MemFree(x), CUDA_SUCCESS);
    FC_EXPECT_RC(d, d.MemFree(x), CUDA_ERROR_INVALID_VALUE);
  });
}

// d. A block freed by another thread than its allocator goes to the shared pool.
void cross_thread_free(const Driver& d, CUcontext ctx) {
  say("d. cross-thread free: A allocates 1 MiB (X), B frees X -> CUDA_SUCCESS; freeing X again "
      "(A, then B) -> CUDA_ERROR_INVALID_VALUE; C's 1 MiB request then gets X");
  Worker a(d, ctx), b(d, ctx), c(d, ctx);
  CUdeviceptr x = 0, y = 0, z = 0;
  a.run([&] {
    x = alloc_ok(d, kMiB);
    stamp(x, kMiB, 0xd1);
  });
  b.run([&] { FC_EXPECT_RC(d, d.MemFree(x), CUDA_SUCCESS); });
  a.run([&] { FC_EXPECT_RC(d, d.MemFree(x), CUDA_ERROR_INVALID_VALUE); });
  b.run([&] { FC_EXPECT_RC(d, d.MemFree(x), CUDA_ERROR_INVALID_VALUE); });
  c.run([&] { y = alloc_ok(d, kMiB); });
  FC_CHECK(y == x, "d: C got %#llx, expected X %#llx (B's free returned it to the shared pool)", y,
           x);
  say("   A's next 1 MiB request does not get X (C holds it; A's failed free cached nothing)");
  a.run([&] { z = alloc_ok(d, kMiB); });
  FC_CHECK(z != y, "d: A got %#llx, which C holds", z);
  expect_apart({{y, kMiB}, {z, kMiB}}, "d: C's and A's blocks");
  c.run([&] { FC_OK(d, d.MemFree(y)); });
  a.run([&] { FC_OK(d, d.MemFree(z)); });
}

// e. A double free of a block that may sit in a thread cache is refused, wherever it comes from.
void double_free_cached(const Driver& d, CUcontext ctx) {
  say("e. double free of a freed (cached) block: by A, then by B -> CUDA_ERROR_INVALID_VALUE; A's "
      "next two 1 MiB requests get X and another block, both writable");
  Worker a(d, ctx), b(d, ctx);
  CUdeviceptr x = 0, y1 = 0, y2 = 0, y3 = 0;
  a.run([&] {
    x = alloc_ok(d, kMiB);
    FC_EXPECT_RC(d, d.MemFree(x), CUDA_SUCCESS);
    FC_EXPECT_RC(d, d.MemFree(x), CUDA_ERROR_INVALID_VALUE);
  });
  b.run([&] { FC_EXPECT_RC(d, d.MemFree(x), CUDA_ERROR_INVALID_VALUE); });
  a.run([&] {
    y1 = alloc_ok(d, kMiB);
    y2 = alloc_ok(d, kMiB);
  });
  FC_CHECK(y1 == x, "e: A's first request got %#llx, expected X %#llx", y1, x);
  FC_CHECK(y2 != y1, "e: A got X %#llx twice (the double free cached it twice)", x);
  b.run([&] { y3 = alloc_ok(d, kMiB); });
  FC_CHECK(y3 != y1 && y3 != y2, "e: B got %#llx, which A holds (A: %#llx, %#llx)", y3, y1, y2);
  expect_apart({{y1, kMiB}, {y2, kMiB}, {y3, kMiB}}, "e: A's two blocks and B's");
  a.run([&] {
    FC_OK(d, d.MemFree(y1));
    FC_OK(d, d.MemFree(y2));
  });
  b.run([&] { FC_OK(d, d.MemFree(y3)); });
}

// After out of memory took A's cached 8 MiB block into B's block y: A's next 8 MiB request must
// come from elsewhere, not from a stale cache entry inside y. Frees both blocks.
void no_stale_entry(const Driver& d, Worker& a, Worker& b, CUdeviceptr y, size_t y_bytes) {
  CUdeviceptr z = 0;
  a.run([&] { z = alloc_ok(d, 8 * kMiB); });
  FC_CHECK(z + 8 * kMiB <= y || z >= y + y_bytes,
           "f: A got %#llx, inside B's %zu MiB block at %#llx (a stale cache entry)", z,
           y_bytes / kMiB, y);
  expect_apart({{y, y_bytes}, {z, 8 * kMiB}}, "f: B's and A's blocks");
  b.run([&] { FC_OK(d, d.MemFree(y)); });
  a.run([&] { FC_OK(d, d.MemFree(z)); });
}

// f. Out of memory: every thread's cache goes back to the pool before an allocation fails.
void oom_flush(const Driver& d, CUcontext ctx) {
  say("f. out of memory: A allocates and frees 8 MiB (X, carved from a 20 MiB segment) and stays "
      "alive; B asks for 20 MiB while every driver allocation fails -> CUDA_SUCCESS, at X");
  Worker a(d, ctx), b(d, ctx);
  const CUdeviceptr x = allocated_and_freed_by(a, d, 8 * kMiB);
  CUdeviceptr y = 0;
  size_t live0 = d.live_allocations(-1);
  unsigned long long a0 = d.alloc_calls();
  CUresult rc = CUDA_ERROR_UNKNOWN;
  d.fail_next_alloc(1000);
  b.run([&] { rc = d.MemAlloc(&y, 20 * kMiB); });
  d.fail_next_alloc(0);  // clears what is left
  say("   B's 20 MiB request: %s at %#llx after %llu failed driver allocations (X %#llx)",
      result_name(d, rc).c_str(), y, d.alloc_calls() - a0, x);
  FC_EXPECT_RC(d, rc, CUDA_SUCCESS);
  FC_CHECK(y == x, "f: B got %#llx, expected X's segment %#llx", y, x);
  FC_CHECK(d.live_allocations(-1) <= live0, "f: the driver gained %zu allocations, expected none",
           d.live_allocations(-1) - live0);

  say("   A's next 8 MiB request must not come from a stale cache entry inside B's block");
  no_stale_entry(d, a, b, y, 20 * kMiB);
}

// f (second part). Out of memory where only the cached block's segment, released to the driver,
// makes room: the caches are flushed before the pool releases its free segments.
void oom_flush_release(const Driver& d, CUcontext ctx) {
  Worker a(d, ctx), b(d, ctx);
  allocated_and_freed_by(a, d, 8 * kMiB);
  CUdeviceptr y = 0;
  const size_t capacity = d.capacity(0);
  const size_t used = d.bytes_in_use(0);
  const size_t cap = (used + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
  say("f. out of memory, second part: A allocates and frees 8 MiB (X) and stays alive; the device "
      "shrinks to the %zu MiB the pool holds; B asks for all %zu MiB -> CUDA_SUCCESS (the pool "
      "must release every segment, X's included)",
      cap / kMiB, cap / kMiB);
  FC_CHECK(d.set_capacity(0, cap) == 0, "f: set_capacity failed");
  CUresult rc = CUDA_ERROR_UNKNOWN;
  b.run([&] { rc = d.MemAlloc(&y, cap); });
  FC_CHECK(d.set_capacity(0, capacity) == 0, "f: restoring the capacity failed");
  say("   B's %zu MiB request: %s; the driver holds %zu MiB", cap / kMiB,
      result_name(d, rc).c_str(), d.bytes_in_use(0) / kMiB);
  FC_EXPECT_RC(d, rc, CUDA_SUCCESS);
  no_stale_entry(d, a, b, y, cap);
}

// j. Stream-ordered frees (cuMemFreeAsync) of pooled blocks take cuMemFree's path: one already
// freed is refused, and one freed by another thread leaves no trace in its allocator's cache.
void free_async(const Driver& d, CUcontext ctx) {
  say("j. cuMemFreeAsync on the legacy stream of a block A freed (cached): "
      "CUDA_ERROR_INVALID_VALUE, and A and B then get two distinct blocks");
  {
    Worker a(d, ctx), b(d, ctx);
    CUdeviceptr x = 0, y1 = 0, y2 = 0;
    a.run([&] {
      x = alloc_ok(d, kMiB);
      FC_OK(d, d.MemFree(x));
      FC_EXPECT_RC(d, d.MemFreeAsync(x, CU_STREAM_LEGACY), CUDA_ERROR_INVALID_VALUE);
      y1 = alloc_ok(d, kMiB);
    });
    b.run([&] { y2 = alloc_ok(d, kMiB); });
    FC_CHECK(y1 != y2, "j: A and B both got %#llx (X %#llx)", y1, x);
    expect_apart({{y1, kMiB}, {y2, kMiB}}, "j: A's and B's blocks");
    a.run([&] { FC_OK(d, d.MemFree(y1)); });
    b.run([&] { FC_OK(d, d.MemFree(y2)); });
  }

  say("j. A allocates 1 MiB (X); B frees it with cuMemFreeAsync on the legacy stream; C's 512 B "
      "request gets X; A frees C's block; A's and C's next 1 MiB blocks do not overlap");
  Worker a(d, ctx), b(d, ctx), c(d, ctx);
  CUdeviceptr x = 0, small = 0, y = 0, z = 0;
  a.run([&] { x = alloc_ok(d, kMiB); });
  b.run([&] { FC_OK(d, d.MemFreeAsync(x, CU_STREAM_LEGACY)); });
  c.run([&] { small = alloc_ok(d, 512); });
  FC_CHECK(small == x, "j: C's 512 B request got %#llx, expected X %#llx (the pool's best fit)",
           small, x);
  a.run([&] {
    FC_OK(d, d.MemFree(small));
    y = alloc_ok(d, kMiB);
  });
  c.run([&] { z = alloc_ok(d, kMiB); });
  FC_CHECK(y + kMiB <= z || z + kMiB <= y,
           "j: A's 1 MiB block %#llx and C's 1 MiB block %#llx overlap (X %#llx)", y, z, x);
  expect_apart({{y, kMiB}, {z, kMiB}}, "j: A's and C's blocks");
  a.run([&] { FC_OK(d, d.MemFree(y)); });
  c.run([&] { FC_OK(d, d.MemFree(z)); });
}

// g. Cached blocks count as free memory.
void meminfo_counts_cached(const Driver& d, CUcontext ctx) {
  say("g. cuMemGetInfo_v2: freeing a 1 MiB block raises free by 1 MiB, for the freeing thread, "
      "another thread, and after the freeing thread exits");
  Worker b(d, ctx);
  size_t f1 = 0, t1 = 0, f2 = 0, t2 = 0, f3 = 0, t3 = 0, f4 = 0, t4 = 0;
  {
    Worker a(d, ctx);
    a.run([&] {
      CUdeviceptr x = alloc_ok(d, kMiB);
      FC_OK(d, d.MemGetInfo(&f1, &t1));
      FC_OK(d, d.MemFree(x));
      FC_OK(d, d.MemGetInfo(&f2, &t2));
    });
    say("   X live: free %zu; X freed: free %zu (%+lld)", f1, f2,
        static_cast<long long>(f2) - static_cast<long long>(f1));
    FC_CHECK(t2 == t1, "g: total changed from %zu to %zu", t1, t2);
    FC_CHECK(f2 >= f1 && f2 - f1 == kMiB, "g: free grew by %lld bytes, expected %zu",
             static_cast<long long>(f2) - static_cast<long long>(f1), kMiB);
    b.run([&] { FC_OK(d, d.MemGetInfo(&f3, &t3)); });
    FC_CHECK(f3 == f2 && t3 == t2, "g: B sees free %zu of %zu, A saw %zu of %zu", f3, t3, f2, t2);
  }
  b.run([&] { FC_OK(d, d.MemGetInfo(&f4, &t4)); });
  FC_CHECK(f4 == f2 && t4 == t2, "g: after A exited, free %zu of %zu, expected %zu of %zu", f4, t4,
           f2, t2);
}

// i. Blocks above the cache's size limit (8 MiB) go back to the pool at once.
void big_block_not_cached(const Driver& d, CUcontext ctx) {
  say("i. a 9 MiB block is not cached: A allocates and frees 9 MiB (X) and stays alive; B's 9 MiB "
      "request gets X");
  Worker a(d, ctx), b(d, ctx);
  CUdeviceptr x = 0;
  a.run([&] {
    x = alloc_ok(d, 9 * kMiB);
    FC_OK(d, d.MemFree(x));
  });
  b.run([&] {
    CUdeviceptr y = alloc_ok(d, 9 * kMiB);
    FC_CHECK(y == x, "i: B got %#llx, expected X %#llx (blocks over 8 MiB skip the cache)", y, x);
    FC_OK(d, d.MemFree(y));
  });
}

// h. Many threads at once: every block keeps its data, live blocks never overlap.
void data_integrity(const Driver& d, CUcontext ctx) {
  const int kThreads = 8, kSteps = 2000;
  const size_t kSizes[] = {512,  1000,     4096,     65536,        500000,  kMiB - 1,
                           kMiB, kMiB + 1, 2 * kMiB, 3 * kMiB + 7, 4 * kMiB};
  const size_t kNumSizes = sizeof(kSizes) / sizeof(kSizes[0]);
  say("h. %d threads x %d alloc/stamp/check/free steps, 512 B .. 4 MiB, one free in eight by "
      "another thread: every block reads back its own tag, live blocks never overlap",
      kThreads, kSteps);
  struct Held {
    CUdeviceptr p;
    size_t n;
    uint64_t tag;
    int owner;
  };
  std::mutex mu;
  std::map<CUdeviceptr, Held> live;  // every thread's live blocks, by address
  std::vector<Held> inbox;           // blocks handed over to be freed by another thread
  auto add = [&](const Held& h) {
    std::lock_guard<std::mutex> lock(mu);
    auto next = live.lower_bound(h.p);
    FC_CHECK(next == live.end() || next->first >= h.p + h.n,
             "h: thread %d's block %#llx+%zu overlaps thread %d's %#llx", h.owner, h.p, h.n,
             next->second.owner, next->first);
    if (next != live.begin()) {
      const Held& prev = std::prev(next)->second;
      FC_CHECK(prev.p + prev.n <= h.p, "h: thread %d's block %#llx overlaps thread %d's %#llx+%zu",
               h.owner, h.p, prev.owner, prev.p, prev.n);
    }
    live.emplace(h.p, h);
  };
  auto check_and_forget = [&](const Held& h, int by) {
    FC_CHECK(stamped(h.p, h.n, h.tag),
             "h: thread %d's block %#llx+%zu (tag %#llx) was overwritten before thread %d freed it",
             h.owner, h.p, h.n, static_cast<unsigned long long>(h.tag), by);
    std::lock_guard<std::mutex> lock(mu);
    live.erase(h.p);
  };
  unsigned long long a0 = d.alloc_calls();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      FC_OK(d, d.CtxSetCurrent(ctx));
      uint64_t rng = 0x7c0000ull + static_cast<uint64_t>(t);
      std::vector<Held> held;
      for (int step = 0; step < kSteps; ++step) {
        uint64_t r = splitmix(&rng);
        if (held.size() < 4 && (held.empty() || (r & 1) != 0)) {
          size_t n = kSizes[(r >> 8) % kNumSizes];
          Held h{alloc_ok(d, n), n, (static_cast<uint64_t>(t + 1) << 48) | (uint64_t(step) << 8),
                 t};
          add(h);
          stamp(h.p, h.n, h.tag);
          held.push_back(h);
        } else {
          size_t i = (r >> 8) % held.size();
          Held h = held[i];
          held[i] = held.back();
          held.pop_back();
          FC_CHECK(stamped(h.p, h.n, h.tag), "h: thread %d's block %#llx+%zu lost its tag", t, h.p,
                   h.n);
          if (((r >> 20) & 7) == 0) {
            std::lock_guard<std::mutex> lock(mu);
            inbox.push_back(h);  // stays in `live` until its new owner frees it
          } else {
            check_and_forget(h, t);
            FC_OK(d, d.MemFree(h.p));
          }
        }
        if (((r >> 24) & 3) == 0) {
          Held other{};
          {
            std::lock_guard<std::mutex> lock(mu);
            if (!inbox.empty()) {
              other = inbox.back();
              inbox.pop_back();
            }
          }
          if (other.p != 0) {
            check_and_forget(other, t);
            FC_OK(d, d.MemFree(other.p));
          }
        }
      }
      for (const Held& h : held) {
        check_and_forget(h, t);
        FC_OK(d, d.MemFree(h.p));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Held& h : inbox) {
    check_and_forget(h, -1);
    FC_OK(d, d.MemFree(h.p));
  }
  FC_CHECK(live.empty(), "h: %zu blocks left", live.size());
  unsigned long long da = d.alloc_calls() - a0;
  size_t f = 0, total = 0;
  FC_OK(d, d.MemGetInfo(&f, &total));
  say("   %llu driver allocations; free %zu of %zu with every block freed and the threads gone", da,
      f, total);
  FC_CHECK(da < static_cast<unsigned long long>(kThreads * kSteps) / 4,
           "h: the pool should serve most requests from its cache (%llu driver allocations)", da);
  FC_CHECK(f == total, "h: free %zu, expected the total %zu (cached idle memory is free)", f,
           total);
}

// Whether the pool's caches are on: A frees a 3 KiB block X it allocated and B asks for 3 KiB
// (small pool; the callers allocate only large-pool sizes meanwhile). Off: the pool's best fit
// gives B X again; on: X stays in A's cache. A's exit hands X back.
bool caches_on(const Driver& d, CUcontext ctx) {
  CUdeviceptr x = 0, y = 0;
  Worker a(d, ctx), b(d, ctx);
  a.run([&] {
    x = alloc_ok(d, 3 * kKiB);
    FC_OK(d, d.MemFree(x));
  });
  b.run([&] {
    y = alloc_ok(d, 3 * kKiB);
    FC_OK(d, d.MemFree(y));
  });
  return y != x;
}

// Allocation+free pairs of 4 MiB (large pool) until `stop`.
void hammer(const Driver& d, CUcontext ctx, const std::atomic<bool>& stop) {
  FC_OK(d, d.CtxSetCurrent(ctx));
  while (!stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 64; ++i) FC_OK(d, d.MemFree(alloc_ok(d, 4 * kMiB)));
  }
}

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

}  // namespace

int thread_cache(const Driver& d, Mode mode, const char* conf, bool cached) {
  FC_CHECK(mode == Mode::kShim, "the thread_cache scenarios run under the shim only");
  require_conf(conf);
  const bool reporting = env_set("CUDAPOOL_LOG") || env_set("CUDAPOOL_SUMMARY");
  if (cached) {
    FC_CHECK(!reporting, "reporting (CUDAPOOL_LOG, CUDAPOOL_SUMMARY) turns the caches off");
  } else if (std::strstr(conf, "always") != nullptr) {
    FC_CHECK(reporting, "with %s and no reporting the caches are on", conf);
  }
  say("CUDAPOOL_CONF=%s%s: thread caches expected %s", std::getenv("CUDAPOOL_CONF"),
      reporting ? " with reporting on" : "", cached ? "on" : "off");
  CUcontext ctx = current(d);
  same_thread_reuse(d, ctx, cached);
  privacy(d, ctx, cached);
  thread_exit(d, ctx);
  cross_thread_free(d, ctx);
  double_free_cached(d, ctx);
  oom_flush(d, ctx);
  oom_flush_release(d, ctx);
  meminfo_counts_cached(d, ctx);
  big_block_not_cached(d, ctx);
  data_integrity(d, ctx);
  free_async(d, ctx);
  return 0;
}

int thread_cache_auto(const Driver& d, Mode mode) {
  FC_CHECK(mode == Mode::kShim, "the thread_cache scenarios run under the shim only");
  require_conf("thread_cache:auto");
  CUcontext ctx = current(d);
  say("k. thread_cache:auto, one thread allocating (20000 pairs of 4 MiB): the caches stay off");
  {
    std::atomic<bool> stop{false};
    std::thread one([&] {
      FC_OK(d, d.CtxSetCurrent(ctx));
      for (int i = 0; i < 20000; ++i) FC_OK(d, d.MemFree(alloc_ok(d, 4 * kMiB)));
    });
    one.join();
  }
  FC_CHECK(!caches_on(d, ctx), "k: the caches came on without any contention");

  say("k. four threads allocating at once: the caches come on (checked every 50 ms; a hang guard "
      "of 300 s)");
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { hammer(d, ctx, stop); });
  // Not a time limit on the shim: a loaded machine under TSan took 97 probes of 200 ms each to
  // reach 20 s before the caches came on (fresh-clone CI run, load 20). Only a hang guard.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  bool on = false;
  int probes = 0;
  while (!on && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    on = caches_on(d, ctx);
    ++probes;
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  say("   caches on after %d probe(s)", probes);
  FC_CHECK(on, "k: the caches did not come on in 300 s of four threads allocating at once");
  return 0;
}

}  // namespace fakecuda_test
