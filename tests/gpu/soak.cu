// SPDX-License-Identifier: Apache-2.0
// tests/gpu/soak.cu: the GPU soak (issue 18). Several host threads, each on its own kind of stream
// (the legacy default stream, the per-thread default stream, a blocking stream, a non-blocking
// stream; cycling through the four), allocate blocks of random sizes with cudaMalloc, launch a
// kernel that writes a pattern unique to the allocation and a kernel that verifies it, and free
// the block right after launching them: while the kernels still run. A block handed to another
// stream before the first stream's kernels finished gets that stream's pattern over it, and the
// first verify counts it as corrupted. Every thread keeps a window of live blocks too (freed
// later, out of order), so the pool splits, merges and reuses across streams all the time.
//
// Usage: soak SECONDS [THREADS] (default 4 threads). Prints one result line:
//   soak: seconds S threads T iterations N corrupted_blocks B corrupted_words W
// (The process's memory over time is sampled from outside, per process: soak.sh, with
// nvidia-smi, since several soaks share the device.) Exit status 0
// when no block was corrupted, 1 when one was, 2 on a CUDA error. Whether a corruption is a
// failure is the caller's (soak.sh: allowed, and reported, under reuse_fence:none only).
// Not here: the settings (the environment the caller sets), the log checks (soak.sh).
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr int kWindow = 48;   // live blocks per thread
constexpr int kSlots = 4096;  // verify flags per thread (a ring)
constexpr int kQueueDepth = 64;  // iterations between stream synchronizations (bounds the queue)

#define SOAK_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "soak: %s failed: %s (line %d)\n", #call, cudaGetErrorString(e_), \
                   __LINE__);                                                             \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

__device__ __forceinline__ std::uint32_t pattern(std::uint64_t tag, std::uint64_t i) {
  std::uint64_t z = tag * 0x9e3779b97f4a7c15ull + i;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<std::uint32_t>(z ^ (z >> 31));
}

// Writes the allocation's pattern, slowly enough (spin rounds) that the free comes first.
__global__ void fill(std::uint32_t* p, std::uint64_t words, std::uint64_t tag, int spin) {
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    std::uint32_t v = pattern(tag, i);
    for (int k = 0; k < spin; ++k) v = (v << 1 | v >> 31) ^ static_cast<std::uint32_t>(k);
    for (int k = 0; k < spin; ++k) v = (v ^ static_cast<std::uint32_t>(k)) >> 1 | v << 31;
    p[i] = v;
  }
}

// Counts the words that are not the pattern, and the block once (flag: this launch's slot).
__global__ void verify(const std::uint32_t* p, std::uint64_t words, std::uint64_t tag,
                       unsigned* flag, unsigned long long* bad_words, unsigned* bad_blocks) {
  unsigned bad = 0;
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    if (p[i] != pattern(tag, i)) ++bad;
  }
  if (bad != 0) {
    atomicAdd(bad_words, static_cast<unsigned long long>(bad));
    if (atomicAdd(flag, 1u) == 0) atomicAdd(bad_blocks, 1u);
  }
}

struct Counters {
  unsigned long long bad_words;
  unsigned bad_blocks;
  unsigned flags[kSlots];
};

std::atomic<bool> g_stop{false};
std::atomic<unsigned long long> g_iterations{0};


void worker(int index, unsigned long long* bad_words, unsigned* bad_blocks) {
  cudaStream_t stream = nullptr;
  switch (index % 4) {
    case 0:
      stream = cudaStreamLegacy;
      break;
    case 1:
      stream = cudaStreamPerThread;
      break;
    case 2:
      SOAK_CHECK(cudaStreamCreate(&stream));
      break;
    default:
      SOAK_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      break;
  }
  Counters* c = nullptr;
  SOAK_CHECK(cudaMalloc(&c, sizeof(Counters)));
  SOAK_CHECK(cudaMemsetAsync(c, 0, sizeof(Counters), stream));
  std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(index));
  std::uniform_real_distribution<double> log_size(8.0, 23.0);  // 256 B .. 8 MiB
  std::vector<void*> live(kWindow, nullptr);
  std::uint64_t iteration = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    const std::size_t bytes = static_cast<std::size_t>(std::exp2(log_size(rng))) & ~std::size_t{3};
    const std::uint64_t words = (bytes < 4 ? 4 : bytes) / 4;
    std::uint32_t* p = nullptr;
    SOAK_CHECK(cudaMalloc(&p, words * 4));
    const std::uint64_t tag = (static_cast<std::uint64_t>(index) << 48) | iteration;
    const int slot = static_cast<int>(iteration % kSlots);
    const unsigned grid = static_cast<unsigned>(words / 256 + 1 < 512 ? words / 256 + 1 : 512);
    SOAK_CHECK(cudaMemsetAsync(&c->flags[slot], 0, sizeof(unsigned), stream));
    fill<<<grid, 256, 0, stream>>>(p, words, tag, 64);
    verify<<<grid, 256, 0, stream>>>(p, words, tag, &c->flags[slot], &c->bad_words,
                                    &c->bad_blocks);
    SOAK_CHECK(cudaGetLastError());
    // Half the blocks are freed at once (their kernels still queued or running); the others
    // replace a random live one, which is freed now.
    if ((rng() & 1) == 0) {
      SOAK_CHECK(cudaFree(p));
    } else {
      void*& victim = live[rng() % kWindow];
      if (victim != nullptr) SOAK_CHECK(cudaFree(victim));
      victim = p;
    }
    ++iteration;
    if (iteration % kQueueDepth == 0) SOAK_CHECK(cudaStreamSynchronize(stream));
  }
  for (void* p : live) {
    if (p != nullptr) SOAK_CHECK(cudaFree(p));
  }
  SOAK_CHECK(cudaStreamSynchronize(stream));
  SOAK_CHECK(cudaMemcpy(bad_words, &c->bad_words, sizeof *bad_words, cudaMemcpyDeviceToHost));
  SOAK_CHECK(cudaMemcpy(bad_blocks, &c->bad_blocks, sizeof *bad_blocks, cudaMemcpyDeviceToHost));
  SOAK_CHECK(cudaFree(c));
  if (index % 4 >= 2) SOAK_CHECK(cudaStreamDestroy(stream));
  g_iterations.fetch_add(iteration);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: soak SECONDS [THREADS]\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  SOAK_CHECK(cudaFree(nullptr));  // the context, before the threads
  std::vector<unsigned long long> bad_words(threads, 0);
  std::vector<unsigned> bad_blocks(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t, &bad_words[t], &bad_blocks[t]);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= seconds) break;
  }
  g_stop.store(true);
  for (std::thread& t : pool) t.join();
  SOAK_CHECK(cudaDeviceSynchronize());
  unsigned long long words = 0;
  unsigned blocks = 0;
  for (int t = 0; t < threads; ++t) {
    words += bad_words[t];
    blocks += bad_blocks[t];
  }
  std::printf(
      "soak: seconds %.0f threads %d iterations %llu corrupted_blocks %u corrupted_words %llu\n",
      seconds, threads, g_iterations.load(), blocks, words);
  return blocks == 0 ? 0 : 1;
}
