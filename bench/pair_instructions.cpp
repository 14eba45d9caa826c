// SPDX-License-Identifier: Apache-2.0
// bench/pair_instructions.cpp: PAIRS cached cuMemAlloc_v2+cuMemFree_v2 pairs of SIZE bytes, reached
// as the CUDA runtime reaches them (dlopen("libcuda.so.1"), cuGetProcAddress_v2), for counting the
// instructions a pair costs under a preloaded library against the fake driver (tests/fakecuda):
// bench/pair_instructions.sh runs it under callgrind at two pair counts and divides the
// difference. Instructions, not time: the fake's speed means nothing. Not a test.
//
//   pair_instructions PAIRS [SIZE]
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

using GetProcAddress = decltype(&::cuGetProcAddress_v2);

template <typename F>
F entry(GetProcAddress gpa, const char* name) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (gpa(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      fn == nullptr) {
    std::fprintf(stderr, "pair_instructions: no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(fn);
}

}  // namespace

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 100000;
  const size_t size = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : size_t(1) << 20;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto* gpa = handle != nullptr
                  ? reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"))
                  : nullptr;
  if (gpa == nullptr) {
    std::fprintf(stderr, "pair_instructions: no libcuda.so.1\n");
    return 1;
  }
  auto init = entry<decltype(&::cuInit)>(gpa, "cuInit");
  auto retain = entry<decltype(&::cuDevicePrimaryCtxRetain)>(gpa, "cuDevicePrimaryCtxRetain");
  auto set_current = entry<decltype(&::cuCtxSetCurrent)>(gpa, "cuCtxSetCurrent");
  auto alloc = entry<decltype(&::cuMemAlloc_v2)>(gpa, "cuMemAlloc");
  auto release = entry<decltype(&::cuMemFree_v2)>(gpa, "cuMemFree");
  CUcontext ctx = nullptr;
  if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS ||
      set_current(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "pair_instructions: no device\n");
    return 1;
  }
  for (long i = 0; i < pairs; ++i) {
    CUdeviceptr p = 0;
    if (alloc(&p, size) != CUDA_SUCCESS || release(p) != CUDA_SUCCESS) {
      std::fprintf(stderr, "pair_instructions: pair %ld failed\n", i);
      return 1;
    }
  }
  std::printf("pairs=%ld size=%zu\n", pairs, size);
  return 0;
}
