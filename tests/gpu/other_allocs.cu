// SPDX-License-Identifier: Apache-2.0
// tests/gpu/other_allocs.cu: the allocation APIs the shim passes through (managed, pitched, 3D,
// page-locked and mapped host memory, stream-ordered from the device's default pool and from a
// pool of the program's, CUDA arrays), interleaved with pooled cudaMalloc blocks that stay live
// across them. Each round writes every allocation through the device, checks it on the host, and
// frees each with its own call; cudaFree of a managed, pitched or stream-ordered pointer goes to
// the driver. The pooled blocks are checked after every round (nothing the other APIs did may
// touch them). Exit status 0 when every check passed.
// Usage: other_allocs [ROUNDS] (default 10)
#include <vector>

#include "common.h"

namespace {

__global__ void add_to(int* p, std::size_t n, int delta) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] += delta;
}

__global__ void fill_ints(int* p, std::size_t n, int value) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = value;
}

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>((n + 255) / 256);
}

int g_failures = 0;

void expect(bool ok, const char* what, int round) {
  if (!ok) {
    printf("CHECK-FAIL round %d: %s\n", round, what);
    ++g_failures;
  }
}

bool all_equal(const std::vector<int>& v, int value) {
  for (int x : v) {
    if (x != value) return false;
  }
  return true;
}

void managed_round(int round) {
  const std::size_t n = (1u << 16) + 17u * round;
  int* m = nullptr;
  CHECK(cudaMallocManaged(&m, n * sizeof(int)));
  for (std::size_t i = 0; i < n; ++i) m[i] = round;
  add_to<<<blocks_for(n), 256>>>(m, n, 5);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok = ok && m[i] == round + 5;
  expect(ok, "managed memory written by a kernel", round);
  cudaPointerAttributes attr{};
  CHECK(cudaPointerGetAttributes(&attr, m));
  expect(attr.type == cudaMemoryTypeManaged, "managed pointer attributes", round);
  CHECK(cudaFree(m));
}

void pitch_round(int round) {
  const std::size_t width = 1000 + round, height = 37;
  int* p = nullptr;
  std::size_t pitch = 0;
  CHECK(cudaMallocPitch(&p, &pitch, width * sizeof(int), height));
  expect(pitch >= width * sizeof(int), "pitch at least the row width", round);
  CHECK(cudaMemset2D(p, pitch, 0, width * sizeof(int), height));
  std::vector<int> host(width * height, round);
  CHECK(cudaMemcpy2D(p, pitch, host.data(), width * sizeof(int), width * sizeof(int), height,
                     cudaMemcpyHostToDevice));
  for (std::size_t row = 0; row < height; ++row) {
    add_to<<<blocks_for(width), 256>>>(
        reinterpret_cast<int*>(reinterpret_cast<char*>(p) + row * pitch), width, 3);
  }
  CHECK_LAUNCH();
  std::vector<int> back(width * height, -1);
  CHECK(cudaMemcpy2D(back.data(), width * sizeof(int), p, pitch, width * sizeof(int), height,
                     cudaMemcpyDeviceToHost));
  expect(all_equal(back, round + 3), "pitched rows written by kernels", round);
  CHECK(cudaFree(p));
}

void malloc3d_round(int round) {
  const cudaExtent extent = make_cudaExtent(64 * sizeof(int), 16 + round, 8);
  cudaPitchedPtr pp{};
  CHECK(cudaMalloc3D(&pp, extent));
  CHECK(cudaMemset3D(pp, 0x11, extent));
  std::vector<unsigned char> back(extent.width * extent.height * extent.depth, 0);
  cudaMemcpy3DParms copy{};
  copy.srcPtr = pp;
  copy.dstPtr = make_cudaPitchedPtr(back.data(), extent.width, extent.width, extent.height);
  copy.extent = extent;
  copy.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3D(&copy));
  bool ok = true;
  for (unsigned char c : back) ok = ok && c == 0x11;
  expect(ok, "3D allocation set and copied back", round);
  CHECK(cudaFree(pp.ptr));
}

void host_round(int round) {
  const std::size_t n = 1u << 14;
  int* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, n * sizeof(int)));
  int* mapped = nullptr;
  CHECK(cudaHostAlloc(&mapped, n * sizeof(int), cudaHostAllocMapped));
  int* mapped_dev = nullptr;
  CHECK(cudaHostGetDevicePointer(&mapped_dev, mapped, 0));
  fill_ints<<<blocks_for(n), 256>>>(mapped_dev, n, round + 7);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok = ok && mapped[i] == round + 7;
  expect(ok, "mapped host memory written by a kernel", round);
  int* dev = nullptr;
  CHECK(cudaMalloc(&dev, n * sizeof(int)));  // pooled, copied through the pinned buffer
  for (std::size_t i = 0; i < n; ++i) pinned[i] = round;
  CHECK(cudaMemcpy(dev, pinned, n * sizeof(int), cudaMemcpyHostToDevice));
  add_to<<<blocks_for(n), 256>>>(dev, n, 1);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(pinned, dev, n * sizeof(int), cudaMemcpyDeviceToHost));
  ok = true;
  for (std::size_t i = 0; i < n; ++i) ok = ok && pinned[i] == round + 1;
  expect(ok, "pinned host memory round trip", round);
  CHECK(cudaFree(dev));
  CHECK(cudaFreeHost(mapped));
  CHECK(cudaFreeHost(pinned));
}

// Two stream-ordered allocations from the device's default pool, one from a pool of the program's.
void async_round(int round, cudaStream_t stream, cudaMemPool_t own_pool) {
  const std::size_t n = (1u << 18) + round;
  int* a = nullptr;
  int* b = nullptr;
  int* c = nullptr;
  CHECK(cudaMallocAsync(&a, n * sizeof(int), stream));
  CHECK(cudaMallocAsync(&b, n * sizeof(int), stream));
  CHECK(cudaMallocFromPoolAsync(&c, n * sizeof(int), own_pool, stream));
  fill_ints<<<blocks_for(n), 256, 0, stream>>>(a, n, round);
  add_to<<<blocks_for(n), 256, 0, stream>>>(a, n, 2);
  CHECK(cudaMemcpyAsync(c, a, n * sizeof(int), cudaMemcpyDeviceToDevice, stream));
  CHECK(cudaMemcpyAsync(b, c, n * sizeof(int), cudaMemcpyDeviceToDevice, stream));
  std::vector<int> back(n, -1);
  CHECK(cudaMemcpyAsync(back.data(), b, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaFreeAsync(a, stream));
  CHECK(cudaFreeAsync(c, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect(all_equal(back, round + 2), "stream-ordered allocations", round);
  CHECK(cudaFree(b));  // cudaFree of a stream-ordered allocation: allowed, goes to the driver
}

void array_round(int round) {
  const std::size_t w = 128, h = 32 + round;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<int>();
  cudaArray_t array = nullptr;
  CHECK(cudaMallocArray(&array, &desc, w, h));
  std::vector<int> host(w * h, round * 3);
  CHECK(cudaMemcpy2DToArray(array, 0, 0, host.data(), w * sizeof(int), w * sizeof(int), h,
                            cudaMemcpyHostToDevice));
  std::vector<int> back(w * h, -1);
  CHECK(cudaMemcpy2DFromArray(back.data(), w * sizeof(int), array, 0, 0, w * sizeof(int), h,
                              cudaMemcpyDeviceToHost));
  expect(back == host, "CUDA array round trip", round);
  CHECK(cudaFreeArray(array));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 10;
  print_banner("other_allocs");
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t own_pool = nullptr;
  CHECK(cudaMemPoolCreate(&own_pool, &props));
  // Pooled blocks that stay live through every round, each with its own value.
  constexpr int kKept = 6;
  const std::size_t kept_sizes[kKept] = {256, 4096, 1 << 20, 3 << 20, 12 << 20, 70 << 20};
  int* kept[kKept] = {};
  for (int k = 0; k < kKept; ++k) {
    const std::size_t n = kept_sizes[k] / sizeof(int);
    CHECK(cudaMalloc(&kept[k], kept_sizes[k]));
    fill_ints<<<blocks_for(n), 256>>>(kept[k], n, 1000 + k);
  }
  CHECK_LAUNCH();
  for (int round = 0; round < rounds; ++round) {
    managed_round(round);
    pitch_round(round);
    malloc3d_round(round);
    host_round(round);
    async_round(round, stream, own_pool);
    array_round(round);
    for (int k = 0; k < kKept; ++k) {
      const std::size_t n = kept_sizes[k] / sizeof(int);
      std::vector<int> back(n, -1);
      CHECK(cudaMemcpy(back.data(), kept[k], kept_sizes[k], cudaMemcpyDeviceToHost));
      expect(all_equal(back, 1000 + k), "a live pooled block kept its data", round);
    }
  }
  for (int k = 0; k < kKept; ++k) CHECK(cudaFree(kept[k]));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaMemPoolDestroy(own_pool));
  printf(
      "other_allocs: %d rounds of managed, pitched, 3D, pinned and mapped host, stream-ordered "
      "and array allocations around %d live pooled blocks: %d failed checks\n",
      rounds, kKept, g_failures);
  return g_failures == 0 ? 0 : 1;
}
