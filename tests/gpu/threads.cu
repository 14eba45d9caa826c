// SPDX-License-Identifier: Apache-2.0
// tests/gpu/threads.cu: 8 host threads allocate and free at once (mixed sizes), each keeping up to
// LIVE blocks. Every new block is filled by a kernel with a pattern of its own (thread, op), and
// checked by a kernel just before it is freed, so a block handed to another thread while still in
// use, or two live blocks that overlap, shows up as bad words. The threads use different kinds of
// stream: thread t % 3 == 0 a non-blocking stream of its own, 1 the per-thread default stream,
// 2 the legacy default stream. A host-side interval set (under a mutex) checks that no two live
// ranges ever overlap: a range is inserted after cudaMalloc returns and removed before cudaFree.
// With --legacy-only every thread uses the legacy default stream (the case where the shim's
// thread caches may keep freed blocks under reuse_fence:auto).
//
//   threads [OPS_PER_THREAD] [--legacy-only]     (OPS_PER_THREAD default 3000)
//
// Exit 0 when every check passed.
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common.h"

namespace {

constexpr int THREADS = 8;
constexpr int LIVE = 6;
const size_t kSizes[] = {
    256, 4096, 65536, size_t(1) << 20, size_t(3) << 20, size_t(12) << 20, size_t(40) << 20};

std::mutex g_mu;
std::map<uintptr_t, uintptr_t> g_live;  // start -> end of every live block
std::atomic<long> g_overlaps{0};
std::atomic<long> g_allocs{0};

void insert_range(void* p, size_t size, int t) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p), b = a + size;
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = g_live.lower_bound(a);
  bool bad = false;
  if (it != g_live.end() && it->first < b) bad = true;
  if (it != g_live.begin() && std::prev(it)->second > a) bad = true;
  if (bad) {
    if (g_overlaps.fetch_add(1) < 10)
      printf("ERROR thread %d: new block [%#lx, %#lx) overlaps a live block\n", t,
             static_cast<unsigned long>(a), static_cast<unsigned long>(b));
  }
  g_live[a] = b;  // keep going; the count says it failed
}

void erase_range(void* p) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_live.erase(reinterpret_cast<uintptr_t>(p));
}

struct Block {
  void* p = nullptr;
  size_t size = 0;
  uint32_t seed = 0;
};

void worker(int t, long ops, bool legacy_only, unsigned long long* d_err,
            std::atomic<int>* failed) {
  CHECK(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  const char* kind = "";
  switch (legacy_only ? 2 : t % 3) {
    case 0:
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      kind = "own non-blocking stream";
      break;
    case 1:
      s = cudaStreamPerThread;
      kind = "per-thread default stream";
      break;
    default:
      s = cudaStreamLegacy;
      kind = "legacy default stream";
      break;
  }
  std::mt19937 rng(1234u + t);
  Block live[LIVE];
  for (long op = 0; op < ops; ++op) {
    Block& b = live[rng() % LIVE];
    if (b.p) {
      check_async(b.p, b.size, b.seed, d_err + t, s);
      erase_range(b.p);
      CHECK(cudaFree(b.p));
      b.p = nullptr;
    }
    size_t size = kSizes[rng() % (sizeof kSizes / sizeof kSizes[0])];
    void* p = nullptr;
    CHECK(cudaMalloc(&p, size));
    if (!p) {
      printf("ERROR thread %d: cudaMalloc(%zu) gave a null pointer\n", t, size);
      failed->store(1);
      return;
    }
    g_allocs.fetch_add(1);
    insert_range(p, size, t);
    b.p = p;
    b.size = size;
    b.seed = (static_cast<uint32_t>(t) << 24) ^ static_cast<uint32_t>(op);
    fill_async(p, size, b.seed, s);
  }
  for (Block& b : live) {
    if (!b.p) continue;
    check_async(b.p, b.size, b.seed, d_err + t, s);
    erase_range(b.p);
    CHECK(cudaFree(b.p));
    b.p = nullptr;
  }
  CHECK(cudaStreamSynchronize(s));
  if (!legacy_only && t % 3 == 0) CHECK(cudaStreamDestroy(s));
  printf("thread %d (%s): %ld ops done\n", t, kind, ops);
}

}  // namespace

int main(int argc, char** argv) {
  long ops = argc > 1 ? atol(argv[1]) : 3000;
  if (ops < 1) ops = 1;
  const bool legacy_only = argc > 2 && std::string(argv[2]) == "--legacy-only";
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  print_banner("threads");

  unsigned long long* d_err = nullptr;
  CHECK(cudaMalloc(&d_err, THREADS * sizeof *d_err));
  CHECK(cudaMemset(d_err, 0, THREADS * sizeof *d_err));
  CHECK(cudaDeviceSynchronize());

  std::atomic<int> failed{0};
  double t0 = now_s();
  std::vector<std::thread> pool;
  for (int t = 0; t < THREADS; ++t) pool.emplace_back(worker, t, ops, legacy_only, d_err, &failed);
  for (auto& th : pool) th.join();
  CHECK(cudaDeviceSynchronize());
  double secs = now_s() - t0;

  unsigned long long h_err[THREADS];
  CHECK(cudaMemcpy(h_err, d_err, sizeof h_err, cudaMemcpyDeviceToHost));
  unsigned long long bad = 0;
  for (int t = 0; t < THREADS; ++t) {
    if (h_err[t]) printf("ERROR thread %d: %llu bad words\n", t, h_err[t]);
    bad += h_err[t];
  }
  CHECK(cudaFree(d_err));
  long left = 0;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    left = static_cast<long>(g_live.size());
  }
  printf(
      "threads: %d threads x %ld ops in %.2f s (%.0f alloc+free pairs/s), bad words %llu, "
      "overlapping live ranges %ld, ranges left %ld\n",
      THREADS, ops, secs, g_allocs.load() / secs, bad, g_overlaps.load(), left);
  bool ok = !failed.load() && bad == 0 && g_overlaps.load() == 0 && left == 0;
  printf("threads: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
