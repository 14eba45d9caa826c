// SPDX-License-Identifier: Apache-2.0
// tests/gpu/alloc_basic.cu: cudaMalloc/cudaFree pairs of several sizes, each block written and read
// back by kernels, with up to RING blocks live at once (so that two live blocks that overlap would
// corrupt each other's pattern). Then a bare loop of pairs for the time per pair. Built three ways
// by run.sh (static cudart, shared cudart, --default-stream per-thread).
//
//   alloc_basic [ITERS]      (default 10000 pairs per size and loop)
//
// Prints per size: checked pairs (us/pair, with 2 kernels each), bare pairs (ns/pair), how often
// cudaMalloc returned the pointer freed just before; then memory before/after from cudaMemGetInfo
// and NVML, and one line "cached: yes|no|unknown" (NVML: device memory still held after every block
// was freed, i.e. a caching pool sits in front of the driver). Exit 0 when every check passed.
#include <cinttypes>
#include <vector>

#include "common.h"

namespace {

constexpr int RING = 4;

struct Live {
  void* p = nullptr;
  size_t size = 0;
  uint32_t seed = 0;
};

bool overlaps(const Live& a, const void* p, size_t size) {
  if (!a.p) return false;
  auto a0 = reinterpret_cast<uintptr_t>(a.p), a1 = a0 + a.size;
  auto b0 = reinterpret_cast<uintptr_t>(p), b1 = b0 + size;
  return a0 < b1 && b0 < a1;
}

}  // namespace

int main(int argc, char** argv) {
  long iters = argc > 1 ? atol(argv[1]) : 10000;
  if (iters < 1) iters = 1;
  const size_t sizes[] = {512, size_t(1) << 20, size_t(8) << 20, size_t(64) << 20};

  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  print_banner("alloc_basic");
  bool have_nvml = open_nvml_for_current_device();
  if (!have_nvml) printf("alloc_basic: NVML not usable: %s\n", nvml_lite::why());

  unsigned long long* d_err = nullptr;
  CHECK(cudaMalloc(&d_err, sizeof *d_err));
  CHECK(cudaMemset(d_err, 0, sizeof *d_err));
  // Load the kernels (lazy module loading) before the baseline is taken.
  fill_async(d_err, 0, 0);
  check_async(d_err, 0, 0, d_err);
  CHECK(cudaDeviceSynchronize());

  size_t free0 = 0, total = 0;
  CHECK(cudaMemGetInfo(&free0, &total));
  long long nvml0 = nvml_lite::used_bytes();

  int failures = 0;
  uint32_t seed = 1;
  for (size_t size : sizes) {
    Live ring[RING];
    long reused = 0, overlap = 0;
    double t0 = now_s();
    for (long i = 0; i < iters; ++i) {
      Live& slot = ring[i % RING];
      void* freed = nullptr;
      if (slot.p) {
        check_async(slot.p, slot.size, slot.seed, d_err);
        CHECK(cudaFree(slot.p));
        freed = slot.p;
        slot.p = nullptr;
      }
      void* p = nullptr;
      CHECK(cudaMalloc(&p, size));
      if (!p) {
        printf("ERROR cudaMalloc(%zu) returned success and a null pointer\n", size);
        return 1;
      }
      if (p == freed) ++reused;
      for (const Live& other : ring)
        if (overlaps(other, p, size)) ++overlap;
      slot.p = p;
      slot.size = size;
      slot.seed = seed++;
      fill_async(p, size, slot.seed);
    }
    for (Live& slot : ring) {
      if (!slot.p) continue;
      check_async(slot.p, slot.size, slot.seed, d_err);
      CHECK(cudaFree(slot.p));
      slot.p = nullptr;
    }
    CHECK(cudaDeviceSynchronize());
    double checked_s = now_s() - t0;
    unsigned long long bad = read_counter(d_err);

    // Bare pairs: no kernels.
    double t1 = now_s();
    for (long i = 0; i < iters; ++i) {
      void* p = nullptr;
      CHECK(cudaMalloc(&p, size));
      CHECK(cudaFree(p));
    }
    double bare_s = now_s() - t1;

    printf(
        "size %zu: checked pairs %.2f us/pair, bare pairs %.0f ns/pair, iters %ld, "
        "same-pointer-again %ld, overlapping-live %ld, bad words %llu\n",
        size, checked_s / iters * 1e6, bare_s / iters * 1e9, iters, reused, overlap, bad);
    if (bad || overlap) {
      printf("ERROR size %zu: %llu bad words, %ld overlapping live blocks\n", size, bad, overlap);
      ++failures;
      CHECK(cudaMemset(d_err, 0, sizeof *d_err));
    }
  }

  CHECK(cudaDeviceSynchronize());
  size_t free1 = 0;
  CHECK(cudaMemGetInfo(&free1, &total));
  long long nvml1 = nvml_lite::used_bytes();
  char a[32], b[32], c[32];
  printf("cudaMemGetInfo free: before %s, after all frees %s (change %+.1f MiB), total %s\n",
         human(double(free0), a, sizeof a), human(double(free1), b, sizeof b),
         (double(free1) - double(free0)) / 1048576.0, human(double(total), c, sizeof c));
  if (nvml0 >= 0 && nvml1 >= 0) {
    double held = double(nvml1 - nvml0);
    printf("NVML used: before %s, after all frees %s (still held %+.1f MiB)\n",
           human(double(nvml0), a, sizeof a), human(double(nvml1), b, sizeof b), held / 1048576.0);
    // The 64 MiB blocks alone leave a 64 MiB segment in a caching pool.
    printf("cached: %s\n", held >= 48.0 * 1048576.0 ? "yes" : "no");
  } else {
    printf("cached: unknown (NVML: %s)\n", nvml_lite::why());
  }

  CHECK(cudaFree(d_err));
  printf("alloc_basic: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
