// SPDX-License-Identifier: Apache-2.0
// bench/vmm_interference.cpp: what the driver's mapping and give-back calls cost a program that
// runs beside them. One thread plays the program: "steps" of queued work (cuMemsetD32Async over a
// buffer, one synchronization a step), either a few large memsets (bandwidth-bound, like a heavy
// image) or many small ones (launch-bound, like a light image). A second thread plays the idle
// release: every PERIOD ms it maps TOTAL bytes in pages of PAGE (cuMemCreate, cuMemMap,
// cuMemSetAccess: what a burst's growth does) and gives them back (cuMemUnmap, cuMemRelease:
// what the release thread does), in one go or paced (one page, then a pause). The program's
// step time is measured with the second thread off and in each mode, interleaved, and the
// background's own time per phase is printed beside it. A benchmark for docs/benchmarks.md
// ("Idle release"), never a test. Built on the GPU machine:
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include bench/vmm_interference.cpp -lcuda -lpthread
//       -o vmm_interference
//   ./vmm_interference [TOTAL_GIB=46] [SECONDS=3] [PERIOD_MS=500]
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "driver_bench.h"

namespace {

struct Background {
  const char* name;
  bool map;          // map and give back TOTAL each period
  bool sync_only;    // only cuCtxSynchronize each period (the release thread's wait)
  std::size_t page;  // page size
  double pace_ms;    // pause after each page given back (0: all at once)
};

struct BackgroundTimes {
  double map_ms = 0, give_back_ms = 0;
  int cycles = 0;
};

// The release thread's stand-in: until stop, every period_ms map total bytes and give them back.
void background(CUcontext ctx, const Background& b, std::size_t total, double period_ms,
                const std::atomic<bool>& stop, BackgroundTimes* out) {
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  const CUmemAllocationProp prop = device_prop(0);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUdeviceptr base = 0;
  if (b.map) check(cuMemAddressReserve(&base, total, 0, 0, 0), "cuMemAddressReserve");
  const std::size_t pages = b.map ? total / b.page : 0;
  std::vector<CUmemGenericAllocationHandle> handles(pages);
  while (!stop.load(std::memory_order_relaxed)) {
    const double start = now_ms();
    if (b.sync_only) check(cuCtxSynchronize(), "cuCtxSynchronize");
    if (b.map) {
      double t = now_ms();
      for (std::size_t i = 0; i < pages; ++i) {
        check(cuMemCreate(&handles[i], b.page, &prop, 0), "cuMemCreate");
        check(cuMemMap(base + i * b.page, b.page, 0, handles[i], 0), "cuMemMap");
        check(cuMemSetAccess(base + i * b.page, b.page, &access, 1), "cuMemSetAccess");
      }
      out->map_ms += now_ms() - t;
      check(cuCtxSynchronize(), "cuCtxSynchronize");
      t = now_ms();
      double paused = 0;
      for (std::size_t i = 0; i < pages; ++i) {
        check(cuMemUnmap(base + i * b.page, b.page), "cuMemUnmap");
        check(cuMemRelease(handles[i]), "cuMemRelease");
        if (b.pace_ms > 0) {
          const double p = now_ms();
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(b.pace_ms));
          paused += now_ms() - p;
        }
      }
      out->give_back_ms += now_ms() - t - paused;
    }
    out->cycles += 1;
    const double left = period_ms - (now_ms() - start);
    if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(left));
  }
  if (b.map) check(cuMemAddressFree(base, total), "cuMemAddressFree");
}

// The program: steps of `launches` memsets over `bytes` each, for `seconds`; the mean step in ms.
double program(CUstream s, CUdeviceptr buf, std::size_t bytes, int launches, double seconds) {
  const double start = now_ms();
  int steps = 0;
  while (now_ms() - start < seconds * 1000) {
    for (int i = 0; i < launches; ++i) {
      check(cuMemsetD32Async(buf, static_cast<unsigned>(i), bytes / 4, s), "cuMemsetD32Async");
    }
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
    ++steps;
  }
  return (now_ms() - start) / steps;
}

}  // namespace

int main(int argc, char** argv) {
  g_bench_name = "vmm_interference";
  const std::size_t gib = std::size_t{1} << 30;
  const std::size_t total = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 46) * gib;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  const double period_ms = argc > 3 ? std::atof(argv[3]) : 500.0;
  check(cuInit(0), "cuInit");
  CUdevice dev = 0;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx = nullptr;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  char name[128] = {};
  cuDeviceGetName(name, sizeof name, dev);
  CUstream stream = nullptr;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const std::size_t buf_bytes = 2 * gib;
  CUdeviceptr buf = 0;
  check(cuMemAlloc(&buf, buf_bytes), "cuMemAlloc");

  const Background modes[] = {
      {"off", false, false, 0, 0},
      {"cuCtxSynchronize only", false, true, 0, 0},
      {"1 GiB pages, at once", true, false, gib, 0},
      {"1 GiB pages, paced 1 ms", true, false, gib, 1.0},
      {"256 MiB pages, at once", true, false, 256u << 20, 0},
      {"20 MiB pages, at once", true, false, 20u << 20, 0},
  };
  struct Work {
    const char* name;
    std::size_t bytes;
    int launches;
  } works[] = {{"bandwidth-bound (8 x 2 GiB memsets)", buf_bytes, 8},
               {"launch-bound (400 x 64 KiB memsets)", 64u << 10, 400}};
  std::printf(
      "# vmm_interference: %s, background maps and gives back %.1f GB every %.0f ms; "
      "program runs %.1f s a cell; mean step ms (x off), background ms per GB map / give back\n",
      name, static_cast<double>(total) / 1e9, period_ms, seconds);
  std::printf("| background | work | step ms | x off | cycles | map ms/GB | give back ms/GB |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Work& w : works) {
    program(stream, buf, w.bytes, w.launches, 0.5);  // warm
    double off = 0;
    for (const Background& b : modes) {
      std::atomic<bool> stop{false};
      BackgroundTimes times;
      std::thread t;
      if (b.map || b.sync_only) {
        t = std::thread(background, ctx, std::cref(b), total, period_ms, std::cref(stop), &times);
      }
      const double step = program(stream, buf, w.bytes, w.launches, seconds);
      stop.store(true);
      if (t.joinable()) t.join();
      if (!b.map && !b.sync_only) off = step;
      const double gb = static_cast<double>(total) / 1e9 * std::max(times.cycles, 1);
      std::printf("| %s | %s | %.3f | %.3f | %d | %.2f | %.2f |\n", b.name, w.name, step,
                  step / off, times.cycles, b.map ? times.map_ms / gb : 0.0,
                  b.map ? times.give_back_ms / gb : 0.0);
      std::fflush(stdout);
    }
  }
  cuMemFree(buf);
  cuStreamDestroy(stream);
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
