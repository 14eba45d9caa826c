// SPDX-License-Identifier: Apache-2.0
// bench/training_log/call_sites.cpp: see call_sites.h.
#include "bench/training_log/call_sites.h"

#include <cinttypes>
#include <cstdio>

namespace cudapool::bench {

namespace {

// The loaded objects (sorted by address) and the frames of a site in each, innermost first.
constexpr const char* kLib = "/opt/venv/lib/python3.12/site-packages/";
enum Object { kPython, kTorchCpu, kTorchCuda, kTorchPython, kCublas, kCudart, kC10Cuda, kObjects };
struct Layout {
  std::uint64_t base, size;
  const char* path;  // under kLib unless absolute
};
constexpr Layout kLayout[kObjects] = {
    {0x5581c4200000, 0x00400000, "/usr/bin/python3.12"},
    {0x7fed9a000000, 0x3c000000, "torch/lib/libtorch_cpu.so"},
    {0x7fedd7400000, 0x06000000, "torch/lib/libtorch_cuda.so"},
    {0x7fedf0600000, 0x01400000, "torch/lib/libtorch_python.so"},
    {0x7fee5d600000, 0x06400000, "nvidia/cu13/lib/libcublas.so.13"},
    {0x7fee8ce00000, 0x00100000, "nvidia/cu13/lib/libcudart.so.13"},
    {0x7fee8d12b000, 0x000c0000, "torch/lib/libc10_cuda.so"},
};

// A return address inside object o, the same for (site, depth) every time: a code offset of the
// object's first three quarters, never 16-byte aligned (a return address follows a call).
std::uint64_t frame_in(Object o, std::size_t site, std::size_t depth) {
  std::uint64_t h = (site + 1) * 0x9e3779b97f4a7c15ull ^ (depth + 1) * 0xc2b2ae3d27d4eb4full;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  const std::uint64_t offset = h % (kLayout[o].size / 4 * 3);
  return kLayout[o].base + (offset | 0x3);
}

}  // namespace

CallSites::CallSites() {
  for (const Layout& l : kLayout) {
    std::string path = l.path[0] == '/' ? l.path : std::string(kLib) + l.path;
    modules_.push_back(log::Module{l.base, l.base + l.size, std::move(path), 0, ""});
  }
  for (std::size_t s = 0; s < kSites; ++s) {
    auto& f = frames_[s];
    std::size_t i = 0;
    if (static_cast<Site>(s) == Site::kCublasHandle) {
      // cublasCreate allocates its own small buffers through cudart.
      f[i++] = 0x7fee8ce146f3;  // libcudart (internal)
      f[i++] = 0x7fee8ce50cc3;  // libcudart cudaMalloc
      for (std::size_t d = 0; d < 4; ++d) f[i++] = frame_in(kCublas, s, d);
    } else {
      // cudaMalloc from c10's allocator (cache off: every tensor is a cudaMalloc).
      f[i++] = 0x7fee8ce146f3;
      f[i++] = 0x7fee8ce50cc3;
      f[i++] = 0x7fee8d16fbec;  // libc10_cuda (the allocator's raw_alloc)
    }
    // The operator in libtorch_cuda, the dispatcher in libtorch_cpu, the binding, the interpreter.
    while (i < 8) f[i] = frame_in(kTorchCuda, s, i), ++i;
    while (i < 12) f[i] = frame_in(kTorchCpu, s, i), ++i;
    while (i < 14) f[i] = frame_in(kTorchPython, s, i), ++i;
    while (i < log::kMaxBacktrace) f[i] = frame_in(kPython, s, i), ++i;
  }
}

std::string CallSites::symbol(std::uint64_t address) const {
  char text[512];
  for (const log::Module& m : modules_) {
    if (address >= m.base && address < m.end) {
      std::snprintf(text, sizeof text, "0x%" PRIx64 " %s(?+0x%" PRIx64 ")", address, m.path.c_str(),
                    address - m.base);
      return text;
    }
  }
  std::snprintf(text, sizeof text, "0x%" PRIx64, address);
  return text;
}

}  // namespace cudapool::bench
