// SPDX-License-Identifier: Apache-2.0
// tests/gpu/contexts.cpp: contexts the program makes itself, through the driver API only (-lcuda,
// no runtime), as a program that manages its own contexts does:
//   two created contexts beside the primary one: blocks of each checked by data, a block freed
//   while the other context is current, range and context attributes asked from the other
//   context, an allocation between cuCtxPushCurrent and cuCtxPopCurrent freed after the pop, a
//   thread per context allocating at once;
//   both destroyed with blocks live and cached: the device's free memory must come back;
//   a free of a block of a destroyed context; a context made after that (the driver may hand out
//   the old handle and addresses) whose blocks must be its own; destroying the current context;
//   CYCLES contexts made and destroyed one after the other (more than the shim's 256 pool slots),
//   each with a block live when it goes; then ALIVE contexts alive at once (an H200 holds about
//   100: each context takes about 1.4 GiB; run.sh asks for none, the fake driver's run for 300).
// Not a timing test.
//
//   contexts [CYCLES [ALIVE [ITERS [KEEP]]]]   (defaults 300, 0, 2000, 0)
//
// KEEP=1: two more contexts, each with a live and a cached block, and the primary context are
// left to the exit, so that an allocation log's summary sums three pools of device 0.
//
// Output: RESULT lines (driver result codes and answers that must read the same with and without
// the shim: same_results in lib/common.sh), INFO lines, and "contexts: N failed checks". Exit 0 when
// every check passed.
#include <cuda.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "driver_common.h"
#include "shim_probe.h"

namespace {

constexpr size_t KiB = size_t(1) << 10;
constexpr size_t MiB = size_t(1) << 20;
constexpr size_t PROBE = 4 * KiB;  // bytes read back at the start, middle and end of a block

int g_failures = 0;

void vline(const char* kind, const char* key, const char* fmt, va_list ap) {
  printf("%s %s ", kind, key);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
}

void line(const char* kind, const char* key, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(kind, key, fmt, ap);
  va_end(ap);
}

// A failed check: an ERROR line, counted.
void failed(const char* what, const char* fmt, ...) {
  ++g_failures;
  va_list ap;
  va_start(ap, fmt);
  vline("ERROR", what, fmt, ap);
  va_end(ap);
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

CUcontext current() {
  CUcontext c = nullptr;
  CU_CHECK(cuCtxGetCurrent(&c));
  return c;
}

CUcontext create_context(CUdevice dev) {
  CUcontext c = nullptr;
  CU_CHECK(cuCtxCreate(&c, nullptr, 0, dev));  // made current (pushed)
  return c;
}

struct Block {
  CUdeviceptr p = 0;
  size_t size = 0;
  unsigned char value = 0;
};

// In the current context: a block of `size` set to `value` (never 0: fresh memory reads 0). The
// memset is asynchronous and the legacy streams of two contexts are not ordered with each other:
// the context is synchronized, so that another context reads the block's value.
Block make_block(size_t size, unsigned char value) {
  Block b{0, size, value};
  CU_CHECK(cuMemAlloc(&b.p, size));
  CU_CHECK(cuMemsetD8(b.p, value, size));
  CU_CHECK(cuCtxSynchronize());
  return b;
}

// Bytes of the probed windows of b (start, middle, end) that are not b.value. Works from any
// context of b's device (unified addressing).
size_t bad_bytes(const Block& b) {
  std::vector<unsigned char> buf(PROBE);
  size_t n = b.size < PROBE ? b.size : PROBE;
  size_t bad = 0;
  const size_t offsets[3] = {0, (b.size / 2) & ~size_t(255), b.size - n};
  for (size_t off : offsets) {
    if (off + n > b.size) off = b.size - n;
    CU_CHECK(cuMemcpyDtoH(buf.data(), b.p + off, n));
    for (size_t i = 0; i < n; ++i) bad += buf[i] != b.value;
  }
  return bad;
}

void expect_intact(const char* what, const Block& b) {
  if (size_t bad = bad_bytes(b)) failed(what, "%zu of the block's probed bytes changed", bad);
}

bool overlap(const Block& a, const Block& b) {
  return a.p < b.p + b.size && b.p < a.p + a.size;
}

size_t free_bytes() {
  size_t free = 0, total = 0;
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemGetInfo(&free, &total));
  return free;
}

// The name of the context that owns ptr (CU_POINTER_ATTRIBUTE_CONTEXT), among `names`.
const char* owner(CUdeviceptr ptr, const std::vector<std::pair<CUcontext, const char*>>& names) {
  CUcontext ctx = nullptr;
  CUresult r = cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, ptr);
  if (r != CUDA_SUCCESS) return cu_name(r);
  for (const auto& [c, name] : names)
    if (c == ctx) return name;
  return ctx == nullptr ? "none" : "another";
}

// cuMemGetAddressRange of ptr + 100 as "base=block-start size=N" (or the error).
void print_range(const char* key, const Block& b) {
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = cuMemGetAddressRange(&base, &size, b.p + 100);
  line("RESULT", key, "%s base=%s size=%zu", cu_name(r),
       r != CUDA_SUCCESS ? "-" : (base == b.p ? "block-start" : "other"),
       r == CUDA_SUCCESS ? size : 0);
}

// One thread's work in its own context: iters pairs of four sizes with up to four blocks live,
// each checked before its free.
void context_worker(CUcontext ctx, long iters, unsigned seed, size_t* bad, long* overlaps) {
  CU_CHECK(cuCtxSetCurrent(ctx));
  const size_t sizes[] = {512, 64 * KiB, MiB, 3 * MiB};
  Block ring[4];
  for (long i = 0; i < iters; ++i) {
    Block& slot = ring[i % 4];
    if (slot.p) {
      *bad += bad_bytes(slot);
      CU_CHECK(cuMemFree(slot.p));
    }
    slot = make_block(sizes[(i / 4 + seed) % 4],
                      static_cast<unsigned char>(1 + (seed * 97 + i) % 255));
    for (const Block& o : ring)
      if (&o != &slot && o.p && overlap(o, slot)) ++*overlaps;
  }
  for (Block& slot : ring) {
    if (!slot.p) continue;
    *bad += bad_bytes(slot);
    CU_CHECK(cuMemFree(slot.p));
  }
  CU_CHECK(cuCtxSynchronize());
}

// Two created contexts beside the primary one, then both destroyed. Returns a block of the
// destroyed context A (for the stale free).
CUdeviceptr two_contexts(CUdevice dev, CUcontext primary, long iters) {
  const size_t free_before = free_bytes();  // primary current
  CUcontext a = create_context(dev);
  Block a1 = make_block(MiB, 0x11);
  CUcontext b = create_context(dev);
  Block b1 = make_block(MiB, 0x22);
  const std::vector<std::pair<CUcontext, const char*>> names = {
      {primary, "primary"}, {a, "A"}, {b, "B"}};
  if (overlap(a1, b1)) failed("two_contexts", "blocks of two contexts overlap");

  // B is current: ask about and free A's block.
  line("RESULT", "owner", "a1=%s b1=%s (B current)", owner(a1.p, names), owner(b1.p, names));
  print_range("range_other_context", a1);
  expect_intact("a1 read from B", a1);
  line("RESULT", "cross_context_free", "%s", cu_name(cuMemFree(a1.p)));
  CU_CHECK(cuCtxSetCurrent(a));
  Block a2 = make_block(MiB, 0x12);
  line("INFO", "cross_context_free_reuse", "A's next 1 MiB block %s the freed one",
       a2.p == a1.p ? "is" : "is not");
  CU_CHECK(cuCtxSetCurrent(b));
  expect_intact("b1 after A's allocation", b1);
  expect_intact("a2", a2);

  // Pushed A over B: allocate, pop, free with B current.
  CU_CHECK(cuCtxPushCurrent(a));
  Block pushed = make_block(8 * MiB, 0x33);
  CUcontext popped = nullptr;
  CU_CHECK(cuCtxPopCurrent(&popped));
  if (popped != a || current() != b) failed("push_pop", "the context stack is not A over B");
  line("RESULT", "pushed_owner", "%s", owner(pushed.p, names));
  expect_intact("pushed block", pushed);
  line("RESULT", "pushed_free", "%s", cu_name(cuMemFree(pushed.p)));

  // A thread per context at once, and this thread in the primary context.
  size_t bad[3] = {};
  long overlaps[3] = {};
  {
    std::thread ta(context_worker, a, iters, 1u, &bad[0], &overlaps[0]);
    std::thread tb(context_worker, b, iters, 2u, &bad[1], &overlaps[1]);
    std::thread tp(context_worker, primary, iters, 3u, &bad[2], &overlaps[2]);
    ta.join();
    tb.join();
    tp.join();
  }
  CU_CHECK(cuCtxSetCurrent(b));
  line("INFO", "threads",
       "3 threads (A, B, primary) x %ld pairs: bad bytes %zu/%zu/%zu, overlapping live blocks "
       "%ld/%ld/%ld",
       iters, bad[0], bad[1], bad[2], overlaps[0], overlaps[1], overlaps[2]);
  if (bad[0] + bad[1] + bad[2] + overlaps[0] + overlaps[1] + overlaps[2])
    failed("threads", "a block lost its data or overlapped another");
  expect_intact("b1 after the threads", b1);
  expect_intact("a2 after the threads", a2);

  // Destroy both with blocks live (a2, a big one in A; b1) and cached (freed blocks of each size).
  CU_CHECK(cuCtxSetCurrent(a));
  Block big = make_block(64 * MiB, 0x44);
  for (size_t size : {size_t(512), MiB, 32 * MiB}) CU_CHECK(cuMemFree(make_block(size, 0x45).p));
  CU_CHECK(cuCtxSetCurrent(b));
  line("RESULT", "destroy_other", "%s", cu_name(cuCtxDestroy(a)));
  if (current() != b) failed("destroy_other", "destroying A changed the current context");
  expect_intact("b1 after A was destroyed", b1);
  line("RESULT", "destroy_current", "%s", cu_name(cuCtxDestroy(b)));
  CUcontext after = current();
  line("RESULT", "current_after_destroy", "%s",
       after == primary ? "primary" : (after == nullptr ? "none" : "another"));
  if (after != primary) CU_CHECK(cuCtxSetCurrent(primary));
  const size_t free_after = free_bytes();
  const double change = (double(free_after) - double(free_before)) / double(MiB);
  line("INFO", "memory_back",
       "free before the two contexts %.1f MiB, after they were destroyed %.1f MiB (%+.1f MiB)",
       free_before / double(MiB), free_after / double(MiB), change);
  if (change < -32.0) failed("memory_back", "%.1f MiB did not come back", -change);
  return big.p;
}

// After A was destroyed: a free of its block, then a new context whose blocks must be its own.
void after_destroy(CUdevice dev, CUcontext primary, CUdeviceptr stale) {
  line("RESULT", "stale_free", "%s", cu_name(cuMemFree(stale)));
  CUcontext c = create_context(dev);
  const std::vector<std::pair<CUcontext, const char*>> names = {{primary, "primary"}, {c, "C"}};
  std::vector<Block> blocks;
  unsigned char v = 0x50;
  for (size_t size : {size_t(512), MiB, 32 * MiB, 64 * MiB})
    blocks.push_back(make_block(size, ++v));
  for (const Block& x : blocks) {
    for (const Block& y : blocks)
      if (&x != &y && overlap(x, y)) failed("new_context", "two live blocks overlap");
  }
  line("RESULT", "new_context_owner", "%s %s %s %s", owner(blocks[0].p, names),
       owner(blocks[1].p, names), owner(blocks[2].p, names), owner(blocks[3].p, names));
  print_range("range_new_context", blocks[2]);
  for (const Block& x : blocks) expect_intact("new context's block", x);
  for (const Block& x : blocks) CU_CHECK(cuMemFree(x.p));
  Block again = make_block(MiB, 0x60);
  expect_intact("new context's block after frees", again);
  CU_CHECK(cuMemFree(again.p));
  line("RESULT", "destroy_new", "%s", cu_name(cuCtxDestroy(c)));
  if (current() != primary) CU_CHECK(cuCtxSetCurrent(primary));
  Block p1 = make_block(MiB, 0x61);
  expect_intact("primary block after the contexts", p1);
  CU_CHECK(cuMemFree(p1.p));
}

// `cycles` contexts one after another, each with a freed and a live block when it is destroyed.
void many_cycles(CUdevice dev, int cycles) {
  if (cycles <= 0) return;
  const size_t free_before = free_bytes();
  const double t0 = now_s();
  int done = 0;
  for (; done < cycles; ++done) {
    CUcontext c = create_context(dev);
    CU_CHECK(cuMemFree(make_block(MiB, 0x70).p));
    Block live = make_block(3 * MiB, static_cast<unsigned char>(1 + done % 255));
    if (bad_bytes(live)) {
      failed("cycles", "context %d: a block lost its data", done);
      break;
    }
    CU_CHECK(cuCtxDestroy(c));
  }
  const double took = now_s() - t0;
  const size_t free_after = free_bytes();
  const double change = (double(free_after) - double(free_before)) / double(MiB);
  line("INFO", "cycles",
       "%d contexts made, used and destroyed in %.1f s (%.1f ms each); free memory %+.1f MiB", done,
       took, took / (done ? done : 1) * 1e3, change);
  if (change < -32.0) failed("cycles", "%.1f MiB did not come back", -change);
}

// `alive` contexts at once, each with a block, checked and destroyed in reverse order.
void many_alive(CUdevice dev, CUcontext primary, int alive) {
  if (alive <= 0) return;
  std::vector<std::pair<CUcontext, Block>> all;
  const double t0 = now_s();
  for (int i = 0; i < alive; ++i) {
    CUcontext c = nullptr;
    CUresult r = cuCtxCreate(&c, nullptr, 0, dev);
    if (r != CUDA_SUCCESS) {
      line("INFO", "alive", "context %d: cuCtxCreate %s; stopping there", i, cu_name(r));
      break;
    }
    Block b{0, MiB, static_cast<unsigned char>(1 + i % 255)};
    r = cuMemAlloc(&b.p, b.size);
    if (r != CUDA_SUCCESS) {
      line("INFO", "alive", "context %d: cuMemAlloc %s; stopping there", i, cu_name(r));
      CU_CHECK(cuCtxDestroy(c));
      break;
    }
    CU_CHECK(cuMemsetD8(b.p, b.value, b.size));
    CU_CHECK(cuCtxSynchronize());
    all.emplace_back(c, b);
    CUcontext popped = nullptr;
    CU_CHECK(cuCtxPopCurrent(&popped));
  }
  size_t bad = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    CU_CHECK(cuCtxPushCurrent(it->first));
    bad += bad_bytes(it->second);
    CU_CHECK(cuMemFree(it->second.p));
    CU_CHECK(cuCtxDestroy(it->first));
  }
  if (current() != primary) CU_CHECK(cuCtxSetCurrent(primary));
  line("INFO", "alive",
       "%zu contexts alive at once, each with a checked block: bad bytes %zu (%.1f s)", all.size(),
       bad, now_s() - t0);
  if (bad) failed("alive", "%zu bytes changed", bad);
}

// Two contexts with a live and a cached block each, left alive (KEEP).
void leave_contexts_alive(CUdevice dev) {
  for (int i = 0; i < 2; ++i) {
    create_context(dev);
    make_block(MiB, static_cast<unsigned char>(0x21 + i));
    CU_CHECK(cuMemFree(make_block(3 * MiB, 0x30).p));
    CUcontext popped = nullptr;
    CU_CHECK(cuCtxPopCurrent(&popped));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? atoi(argv[1]) : 300;
  const int alive = argc > 2 ? atoi(argv[2]) : 0;
  const long iters = argc > 3 ? atol(argv[3]) : 2000;
  const bool keep = argc > 4 && atoi(argv[4]) != 0;
  CUdevice dev;
  const CUcontext primary = start_on_primary("contexts", &dev);
  // The primary context holds a block throughout, so its pool (under the shim) is in use.
  Block held = make_block(MiB, 0x7f);

  CUdeviceptr stale = two_contexts(dev, primary, iters);
  after_destroy(dev, primary, stale);
  many_cycles(dev, cycles);
  many_alive(dev, primary, alive);

  expect_intact("the primary context's block at the end", held);
  CU_CHECK(cuMemFree(held.p));
  if (keep) {
    leave_contexts_alive(dev);
  } else {
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
  }
  printf("contexts: %d failed checks\n", g_failures);
  return g_failures ? 1 : 0;
}
