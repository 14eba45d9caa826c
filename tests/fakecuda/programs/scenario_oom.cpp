// tests/fakecuda/programs/scenario_oom.cpp: out-of-memory answers that explain themselves (run by
// oom_explained.sh, which checks the shim's stderr and log). On a 64 MiB fake device: a 40 MiB
// block, then three requests of 40 MiB that cannot fit (one situation: one message), then the
// block freed and a 40 MiB request that fits again.
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {

int oom_explained(const Driver& d, Mode mode) {
  const size_t cap = d.capacity(0);
  FC_CHECK(cap == 64 * kMiB, "run with FAKECUDA_DEVICE_MEMORY=67108864 (capacity %zu)", cap);
  CUdeviceptr big = alloc_ok(d, 40 * kMiB);
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr p = 0;
    FC_EXPECT_RC(d, d.MemAlloc(&p, 40 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  }
  FC_OK(d, d.MemFree(big));
  CUdeviceptr again = alloc_ok(d, 40 * kMiB);
  FC_OK(d, d.MemFree(again));
  say("three failed 40 MiB requests beside a live 40 MiB block (%s), then one that fits",
      mode == Mode::kShim ? "shim" : "fake");
  return 0;
}

}  // namespace fakecuda_test
