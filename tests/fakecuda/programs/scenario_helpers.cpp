// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_helpers.cpp: the helpers every scenario file shares (declared in
// scenarios.h): say (a line of output), alloc_ok, host, stamp/stamped (data checks), splitmix,
// current, device0_pinned, calls_exceed, and fail/result_name behind FC_CHECK and FC_EXPECT_RC. Not
// a place for scenarios (scenario_*.cpp) nor for the dispatch by name (scenarios.cpp).
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "scenarios.h"

namespace fakecuda_test {

void say(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::fputs("  ", stdout);
  std::vfprintf(stdout, fmt, args);
  std::fputc('\n', stdout);
  va_end(args);
  std::fflush(stdout);
}

bool calls_exceed(const Driver& d, const char* name, unsigned long long before, double limit_ms) {
  const auto start = std::chrono::steady_clock::now();
  while (d.calls(name) <= before) {
    if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count() > limit_ms) {
      return false;
    }
    usleep(500);
  }
  return true;
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

void require_conf(const char* with, const char* without) {
  const char* env = std::getenv("CUDAPOOL_CONF");
  const std::string conf = env != nullptr ? env : "";
  for (bool wanted : {true, false}) {
    std::istringstream list(wanted ? with : without);
    for (std::string pair; std::getline(list, pair, ',');) {
      if (pair.empty()) continue;
      FC_CHECK((conf.find(pair) != std::string::npos) == wanted,
               "CUDAPOOL_CONF is '%s', expected it %s '%s'", conf.c_str(),
               wanted ? "to hold" : "not to hold", pair.c_str());
    }
  }
}

}  // namespace fakecuda_test
