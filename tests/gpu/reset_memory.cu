// SPDX-License-Identifier: Apache-2.0
// tests/gpu/reset_memory.cu: device memory after cudaDeviceReset while the pool holds 1 GiB it
// cached (allocated, written, freed). The reset must give all of it back: with
// expandable_segments:True the pool's pages come from cuMemCreate, which the driver keeps past a
// context (measured on the H200: 1.016 GiB stayed allocated before the shim gave them back).
// Prints the free memory before and after; exit 0 when the loss is under 64 MiB and memory can be
// allocated again, 1 otherwise.
//
//   reset_memory [RESETS]   then RESETS more resets, each after a freed and a live block (more
//                           than the shim's 256 pool slots: each reset brings a new context);
//                           every allocation must succeed and keep its data.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common.h"

namespace {

// `resets` times: a block freed, a block of 3 MiB set and read back, then cudaDeviceReset.
bool many_resets(int resets) {
  const size_t size = size_t(3) << 20;
  std::vector<unsigned char> back(size);
  size_t free0 = 0, free1 = 0, total = 0;
  CHECK(cudaMemGetInfo(&free0, &total));
  const double t0 = now_s();
  for (int i = 0; i < resets; ++i) {
    void* p = nullptr;
    CHECK(cudaMalloc(&p, size));
    CHECK(cudaFree(p));
    CHECK(cudaMalloc(&p, size));
    const unsigned char v = static_cast<unsigned char>(1 + i % 255);
    CHECK(cudaMemset(p, v, size));
    CHECK(cudaMemcpy(back.data(), p, size, cudaMemcpyDeviceToHost));
    for (unsigned char b : back) {
      if (b != v) {
        printf("reset_memory: reset %d: a block lost its data\n", i);
        return false;
      }
    }
    CHECK(cudaDeviceReset());
  }
  CHECK(cudaFree(0));
  CHECK(cudaMemGetInfo(&free1, &total));
  const double change = (double(free1) - double(free0)) / double(size_t(1) << 20);
  printf(
      "reset_memory: %d resets, each after a freed and a live 3 MiB block, %.1f s; free memory "
      "%+.1f MiB\n",
      resets, now_s() - t0, change);
  return change > -64.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int resets = argc > 1 ? atoi(argv[1]) : 0;
  const size_t gib = size_t(1) << 30;
  size_t free0 = 0, free1 = 0, total = 0;
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  CHECK(cudaMemGetInfo(&free0, &total));
  void* p = nullptr;
  CHECK(cudaMalloc(&p, gib));
  CHECK(cudaMemset(p, 1, gib));
  CHECK(cudaFree(p));
  CHECK(cudaDeviceReset());
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  CHECK(cudaMemGetInfo(&free1, &total));
  void* q = nullptr;
  const cudaError_t again = cudaMalloc(&q, gib);
  const double change = (double(free1) - double(free0)) / double(gib);
  printf(
      "reset_memory: shim %s, free before %.3f GiB, after the reset %.3f GiB (%+.3f GiB), "
      "1 GiB again: %s\n",
      shim_loaded() ? "loaded" : "not-loaded", double(free0) / double(gib),
      double(free1) / double(gib), change, cudaGetErrorName(again));
  bool ok = change > -1.0 / 16 && again == cudaSuccess;
  printf("reset_memory: %s\n", ok ? "ok" : "FAILED: memory was lost to the reset");
  if (again == cudaSuccess) CHECK(cudaFree(q));
  if (resets > 0 && !many_resets(resets)) {
    printf("reset_memory: FAILED: the repeated resets\n");
    ok = false;
  }
  return ok ? 0 : 1;
}
