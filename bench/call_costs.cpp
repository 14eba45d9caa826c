// SPDX-License-Identifier: Apache-2.0
// bench/call_costs.cpp: what the building blocks of the shim's hot path cost on this machine, in ns
// per call: the clocks (CLOCK_MONOTONIC through the vDSO or a system call, the TSC), and the driver
// calls a hook makes (cuCtxGetId, cuCtxGetCurrent). A benchmark, never a test. Needs a GPU and the
// driver (loaded with dlopen: no -lcuda); build: g++ -O2 -std=c++17 -I$CUDA_HOME/include
// call_costs.cpp -ldl. Prints `name=ns` lines and the clock source the kernel uses.
#include <cuda.h>
#include <dlfcn.h>
#include <time.h>
#include <x86intrin.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

using clk = std::chrono::steady_clock;

template <class Fn>
double ns_per_call(Fn&& fn, int n = 2000000) {
  for (int i = 0; i < 1000; ++i) fn();
  const auto t0 = clk::now();
  for (int i = 0; i < n; ++i) fn();
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / n;
}

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line.empty() ? "?" : line;
}

}  // namespace

int main() {
  std::printf(
      "clocksource=%s\n",
      first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource").c_str());
  volatile std::uint64_t sink = 0;
  std::printf("clock_gettime_monotonic=%.1f\n", ns_per_call([&] {
                timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                sink = sink + static_cast<std::uint64_t>(ts.tv_nsec);
              }));
  std::printf("clock_gettime_monotonic_coarse=%.1f\n", ns_per_call([&] {
                timespec ts;
                clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
                sink = sink + static_cast<std::uint64_t>(ts.tv_nsec);
              }));
  std::printf("rdtsc=%.1f\n", ns_per_call([&] { sink = sink + __rdtsc(); }));

  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (cuda == nullptr) {
    std::printf("libcuda.so.1 not found: no driver call costs\n");
    return 0;
  }
  auto sym = [&](const char* name) { return dlsym(cuda, name); };
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(sym("cuInit"));
  auto retain =
      reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(sym("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<CUresult (*)(CUcontext)>(sym("cuCtxSetCurrent"));
  auto get_current = reinterpret_cast<CUresult (*)(CUcontext*)>(sym("cuCtxGetCurrent"));
  auto get_id = reinterpret_cast<CUresult (*)(CUcontext, unsigned long long*)>(sym("cuCtxGetId"));
  CUcontext ctx = nullptr;
  if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS ||
      set_current(ctx) != CUDA_SUCCESS) {
    std::printf("no CUDA context: no driver call costs\n");
    return 0;
  }
  std::printf("cuCtxGetCurrent=%.1f\n", ns_per_call([&] {
                CUcontext c = nullptr;
                get_current(&c);
                sink = sink + reinterpret_cast<std::uintptr_t>(c);
              }));
  std::printf("cuCtxGetId=%.1f\n", ns_per_call([&] {
                unsigned long long id = 0;
                get_id(nullptr, &id);
                sink = sink + id;
              }));
  return 0;
}
