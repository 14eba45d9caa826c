// SPDX-License-Identifier: Apache-2.0
// tests/gpu/result_lines.h: the output protocol of the GPU programs whose answers run.sh compares
// between a run without the shim and runs under it (errors.cu, odd_uses.cu): `RESULT key value`,
// `RESULT-SOFT key value`, `INFO key value` lines and EXPECT, which prints `CHECK-FAIL` and counts
// the failure in g_fail. Error names for both APIs. Header-only; include from one .cu file per
// program, after common.h. Not the comparison itself (same_results, tests/gpu/lib/common.sh).
#pragma once

#include <cuda.h>

#include <cstdarg>
#include <cstdio>

namespace result_lines {

inline int g_fail = 0;

inline void line(const char* kind, const char* key, const char* fmt, ...) {
  printf("%s %s ", kind, key);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

inline const char* en(cudaError_t e) {
  return cudaGetErrorName(e);
}

inline const char* cu_en(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}

}  // namespace result_lines

// A check of this run: on failure one CHECK-FAIL line (where, the message, the condition).
#define EXPECT(cond, ...)                               \
  do {                                                  \
    if (!(cond)) {                                      \
      printf("CHECK-FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                              \
      printf("  [%s]\n", #cond);                        \
      ++result_lines::g_fail;                           \
    }                                                   \
  } while (0)
