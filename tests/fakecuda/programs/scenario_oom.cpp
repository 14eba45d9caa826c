// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_oom.cpp: out-of-memory answers that explain themselves.
// oom_explained (run by oom_explained.sh, which checks the shim's stderr and log): on a 64 MiB
// fake device, a 40 MiB block, then three requests of 40 MiB that cannot fit (one situation: one
// message), then the block freed and a 40 MiB request that fits again. oom_steps (run by
// oom_causes.sh): the allocations and frees that OOM_STEPS lists, each answer printed, so that a
// script can bring about each cause of an out-of-memory.
#include <cstdlib>
#include <sstream>
#include <string>
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

int oom_steps(const Driver& d) {
  // OOM_STEPS: words "aN" (cuMemAlloc_v2 of N bytes, N may end in M for MiB; the pointer is kept,
  // 0 when it failed) and "fI" (frees the pointer of the I-th "a", counted from 0).
  const char* steps = std::getenv("OOM_STEPS");
  FC_CHECK(steps != nullptr, "run with OOM_STEPS set");
  std::vector<CUdeviceptr> kept;
  std::istringstream words(steps);
  std::string w;
  while (words >> w) {
    FC_CHECK(w.size() >= 2 && (w[0] == 'a' || w[0] == 'f'), "bad step '%s'", w.c_str());
    char* end = nullptr;
    size_t n = std::strtoull(w.c_str() + 1, &end, 10);
    if (*end == 'M') {
      n *= kMiB;
      ++end;
    }
    FC_CHECK(*end == '\0', "bad step '%s'", w.c_str());
    if (w[0] == 'a') {
      CUdeviceptr p = 0;
      const CUresult rc = d.MemAlloc(&p, n);
      kept.push_back(rc == CUDA_SUCCESS ? p : 0);
      say("step %s: %s", w.c_str(), result_name(d, rc).c_str());
    } else {
      FC_CHECK(n < kept.size() && kept[n] != 0, "step '%s' frees no block", w.c_str());
      FC_OK(d, d.MemFree(kept[n]));
      kept[n] = 0;
      say("step %s: freed", w.c_str());
    }
  }
  for (CUdeviceptr p : kept) {
    if (p != 0) FC_OK(d, d.MemFree(p));
  }
  return 0;
}

}  // namespace fakecuda_test
