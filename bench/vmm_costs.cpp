// SPDX-License-Identifier: Apache-2.0
// bench/vmm_costs.cpp: what mapping device memory costs on this GPU, by the CUDA driver's virtual
// memory calls, the way expandable segments map it. For each page size, TOTAL bytes are mapped
// into one reserved range and given back, in three styles:
//   per-page   cuMemCreate, cuMemMap, cuMemSetAccess page by page; cuMemUnmap and cuMemRelease
//              page by page (what the shim's CudaBackend did through 2026-12-04)
//   batched    cuMemCreate and cuMemMap page by page, then one cuMemSetAccess over the range; one
//              cuMemUnmap over the range, then cuMemRelease page by page (PyTorch's
//              ExpandableSegment)
//   chunked    as batched, in chunks of CHUNK bytes (a request maps its own pages at once)
// and, beside them, cuMemAlloc/cuMemFree of TOTAL in one call. Each phase is timed alone (wall
// clock, after cuCtxSynchronize), ROUNDS times; the table prints the median in ms and per GB.
// A benchmark for docs/benchmarks.md ("Idle release"), never a test. Built on the GPU machine:
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include bench/vmm_costs.cpp -o vmm_costs -lcuda
//   ./vmm_costs [TOTAL_GIB=32] [ROUNDS=3] [CHUNK_MIB=1024]
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "driver_bench.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Phases {
  std::vector<double> create, map, access, unmap, release;
};

// One round of one style: map total bytes at base in pages, chunk bytes at a time (chunk ==
// page: per-page access and unmap), then give them back the same way.
void one_round(CUdeviceptr base, std::size_t total, std::size_t page, std::size_t chunk, int device,
               Phases* out) {
  const CUmemAllocationProp prop = device_prop(device);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const std::size_t pages = total / page;
  std::vector<CUmemGenericAllocationHandle> handles(pages);
  double create = 0, map = 0, acc = 0, unmap = 0, release = 0;
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  for (std::size_t first = 0; first < pages; first += chunk / page) {
    const std::size_t last = std::min(pages, first + chunk / page);
    double t = now_ms();
    for (std::size_t i = first; i < last; ++i)
      check(cuMemCreate(&handles[i], page, &prop, 0), "cuMemCreate");
    create += now_ms() - t;
    t = now_ms();
    for (std::size_t i = first; i < last; ++i)
      check(cuMemMap(base + i * page, page, 0, handles[i], 0), "cuMemMap");
    map += now_ms() - t;
    t = now_ms();
    check(cuMemSetAccess(base + first * page, (last - first) * page, &access, 1), "cuMemSetAccess");
    acc += now_ms() - t;
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  for (std::size_t first = 0; first < pages; first += chunk / page) {
    const std::size_t last = std::min(pages, first + chunk / page);
    double t = now_ms();
    check(cuMemUnmap(base + first * page, (last - first) * page), "cuMemUnmap");
    unmap += now_ms() - t;
    t = now_ms();
    for (std::size_t i = first; i < last; ++i) check(cuMemRelease(handles[i]), "cuMemRelease");
    release += now_ms() - t;
  }
  out->create.push_back(create);
  out->map.push_back(map);
  out->access.push_back(acc);
  out->unmap.push_back(unmap);
  out->release.push_back(release);
}

}  // namespace

int main(int argc, char** argv) {
  g_bench_name = "vmm_costs";
  const std::size_t gib = std::size_t{1} << 30;
  const std::size_t total = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 32) * gib;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::size_t chunk_bytes = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024) << 20;
  check(cuInit(0), "cuInit");
  CUdevice dev = 0;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx = nullptr;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  char name[128] = {};
  cuDeviceGetName(name, sizeof name, dev);
  const CUmemAllocationProp prop = device_prop(0);
  std::size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  CUdeviceptr base = 0;
  check(cuMemAddressReserve(&base, total, 0, 0, 0), "cuMemAddressReserve");
  const double gb = static_cast<double>(total) / 1e9;
  std::printf(
      "# vmm_costs: %s, %.1f GB mapped and given back per round, %d rounds, "
      "granularity %zu B, chunk %zu MiB; median ms (ms per GB)\n",
      name, gb, rounds, granularity, chunk_bytes >> 20);
  std::printf(
      "| page | style | cuMemCreate | cuMemMap | cuMemSetAccess | map total | cuMemUnmap "
      "| cuMemRelease | give back total |\n| --- | --- | --- | --- | --- | --- | --- | --- "
      "| --- |\n");
  const std::size_t page_sizes[] = {2u << 20, 20u << 20, 256u << 20, 1024u << 20};
  for (std::size_t page : page_sizes) {
    struct Style {
      const char* name;
      std::size_t chunk;
    } styles[] = {{"per-page", page}, {"batched", total}, {"chunked", std::max(page, chunk_bytes)}};
    for (const Style& s : styles) {
      Phases ph;
      for (int r = 0; r < rounds; ++r) one_round(base, total, page, s.chunk, 0, &ph);
      const double c = median(ph.create), m = median(ph.map), a = median(ph.access);
      const double u = median(ph.unmap), rl = median(ph.release);
      auto cell = [&](double ms) {
        static char buf[8][48];
        static int k = 0;
        char* b = buf[k++ % 8];
        std::snprintf(b, 48, "%.1f (%.2f)", ms, ms / gb);
        return std::string(b);
      };
      std::printf("| %zu MiB | %s | %s | %s | %s | %s | %s | %s | %s |\n", page >> 20, s.name,
                  cell(c).c_str(), cell(m).c_str(), cell(a).c_str(), cell(c + m + a).c_str(),
                  cell(u).c_str(), cell(rl).c_str(), cell(u + rl).c_str());
      std::fflush(stdout);
    }
  }
  check(cuMemAddressFree(base, total), "cuMemAddressFree");
  std::vector<double> alloc_ms, free_ms;
  for (int r = 0; r < rounds; ++r) {
    CUdeviceptr p = 0;
    double t = now_ms();
    check(cuMemAlloc(&p, total), "cuMemAlloc");
    alloc_ms.push_back(now_ms() - t);
    t = now_ms();
    check(cuMemFree(p), "cuMemFree");
    free_ms.push_back(now_ms() - t);
  }
  std::printf("\ncuMemAlloc of %.1f GB: %.1f ms (%.2f ms per GB); cuMemFree: %.1f ms (%.2f)\n", gb,
              median(alloc_ms), median(alloc_ms) / gb, median(free_ms), median(free_ms) / gb);
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
