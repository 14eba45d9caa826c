// SPDX-License-Identifier: Apache-2.0
// tests/gpu/libraries.cu: CUDA's own libraries under the shim. cuBLAS and cuFFT carry their own
// static copy of cudart, so their workspace allocations reach the driver through their own
// cuGetProcAddress lookups, not the program's; Thrust and CUB allocate through the program's
// cudart. Each round makes and destroys a cuBLAS handle (on a non-blocking stream) and a cuFFT
// plan, sorts with Thrust and with CUB (temporary storage from cudaMalloc each time), and checks
// every result against the CPU. Prints the number of cudaMalloc calls the program itself made, so
// a log of the run can show how many came from the libraries. Not a benchmark.
//
// Usage: libraries [ROUNDS] (default 20). Exit status 0 when every result matched.
#include <cublas_v2.h>
#include <cufft.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>

#include <algorithm>
#include <cmath>
#include <cub/device/device_radix_sort.cuh>
#include <numeric>
#include <random>
#include <vector>

#include "common.h"

namespace {

int g_direct_mallocs = 0;

template <class T>
T* device_alloc(std::size_t count) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, count * sizeof(T)));
  ++g_direct_mallocs;
  return static_cast<T*>(p);
}

// A library call that must return `success`: on failure print where, the call and its status, and
// exit 1.
#define CHECK_STATUS(library, call, success)                                            \
  do {                                                                                  \
    const auto status_ = (call);                                                        \
    if (status_ != (success)) {                                                         \
      fprintf(stderr, "%s error %s:%d: %s -> %d\n", library, __FILE__, __LINE__, #call, \
              static_cast<int>(status_));                                               \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)
#define CHECK_CUBLAS(call) CHECK_STATUS("cuBLAS", call, CUBLAS_STATUS_SUCCESS)
#define CHECK_CUFFT(call) CHECK_STATUS("cuFFT", call, CUFFT_SUCCESS)

// C = A * B with small integer entries: exact in float, so the GPU must match the CPU bit for bit.
bool gemm_round(std::mt19937& rng, int round) {
  const int m = 96 + round, n = 80, k = 64 + 2 * round;
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n);
  for (float& x : a) x = static_cast<float>(small(rng));
  for (float& x : b) x = static_cast<float>(small(rng));
  std::vector<float> want(static_cast<std::size_t>(m) * n, 0.0f);
  for (int j = 0; j < n; ++j)  // column-major, as cuBLAS
    for (int p = 0; p < k; ++p)
      for (int i = 0; i < m; ++i) want[i + j * m] += a[i + p * m] * b[p + j * k];

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  float* da = device_alloc<float>(a.size());
  float* db = device_alloc<float>(b.size());
  float* dc = device_alloc<float>(want.size());
  CHECK(cudaMemcpyAsync(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  CHECK(cudaMemcpyAsync(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &zero, dc, m));
  std::vector<float> got(want.size());
  CHECK(
      cudaMemcpyAsync(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK_CUBLAS(cublasDestroy(handle));
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  CHECK(cudaStreamDestroy(stream));
  const std::size_t bad = static_cast<std::size_t>(
      std::inner_product(got.begin(), got.end(), want.begin(), std::size_t{0}, std::plus<>(),
                         [](float x, float y) { return x != y ? 1 : 0; }));
  if (bad != 0)
    printf("CHECK-FAIL round %d: sgemm %dx%dx%d: %zu entries differ\n", round, m, n, k, bad);
  return bad == 0;
}

// A forward and an inverse complex transform give the input back, scaled by n.
bool fft_round(std::mt19937& rng, int round) {
  const int n = 4096 + 256 * round, batch = 4;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<cufftComplex> x(static_cast<std::size_t>(n) * batch);
  for (cufftComplex& c : x) c = {unit(rng), unit(rng)};
  cufftHandle plan;
  CHECK_CUFFT(cufftPlan1d(&plan, n, CUFFT_C2C, batch));
  cufftComplex* d = device_alloc<cufftComplex>(x.size());
  CHECK(cudaMemcpy(d, x.data(), x.size() * sizeof(cufftComplex), cudaMemcpyHostToDevice));
  CHECK_CUFFT(cufftExecC2C(plan, d, d, CUFFT_FORWARD));
  CHECK_CUFFT(cufftExecC2C(plan, d, d, CUFFT_INVERSE));
  std::vector<cufftComplex> y(x.size());
  CHECK(cudaMemcpy(y.data(), d, y.size() * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
  CHECK_CUFFT(cufftDestroy(plan));
  CHECK(cudaFree(d));
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(y[i].x) / n - x[i].x));
    worst = std::max(worst, std::fabs(static_cast<double>(y[i].y) / n - x[i].y));
  }
  if (!(worst < 1e-4)) printf("CHECK-FAIL round %d: fft n=%d: worst error %g\n", round, n, worst);
  return worst < 1e-4;
}

// Thrust: sort and sum a device_vector (its storage and the sort's temporary storage come from
// Thrust's own cudaMalloc calls).
bool thrust_round(std::mt19937& rng, int round) {
  const std::size_t n = (1u << 18) + 1000u * round;
  std::vector<int> h(n);
  for (int& v : h) v = static_cast<int>(rng() % 1000000);
  thrust::device_vector<int> d(h.begin(), h.end());
  thrust::sort(d.begin(), d.end());
  const long long sum = thrust::reduce(d.begin(), d.end(), 0LL);
  std::vector<int> got(n);
  thrust::copy(d.begin(), d.end(), got.begin());
  std::sort(h.begin(), h.end());
  const long long want_sum = std::accumulate(h.begin(), h.end(), 0LL);
  const bool ok = got == h && sum == want_sum;
  if (!ok) printf("CHECK-FAIL round %d: thrust sort/reduce of %zu ints\n", round, n);
  return ok;
}

// CUB: radix sort with temporary storage the program allocates and frees each time.
bool cub_round(std::mt19937& rng, int round) {
  const int n = (1 << 17) + 77 * round;
  std::vector<unsigned> h(n);
  for (unsigned& v : h) v = static_cast<unsigned>(rng());
  unsigned* in = device_alloc<unsigned>(n);
  unsigned* out = device_alloc<unsigned>(n);
  CHECK(cudaMemcpy(in, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  std::size_t temp_bytes = 0;
  CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, in, out, n));
  void* temp = device_alloc<char>(temp_bytes);
  CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, out, n));
  std::vector<unsigned> got(n);
  CHECK(cudaMemcpy(got.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(temp));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  std::sort(h.begin(), h.end());
  const bool ok = got == h;
  if (!ok) printf("CHECK-FAIL round %d: cub radix sort of %d keys\n", round, n);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 20;
  print_banner("libraries");
  std::mt19937 rng(12345);
  int failures = 0;
  for (int round = 0; round < rounds; ++round) {
    failures += gemm_round(rng, round) ? 0 : 1;
    failures += fft_round(rng, round) ? 0 : 1;
    failures += thrust_round(rng, round) ? 0 : 1;
    failures += cub_round(rng, round) ? 0 : 1;
  }
  CHECK(cudaDeviceSynchronize());
  printf(
      "libraries: %d rounds of cuBLAS sgemm, cuFFT forward+inverse, Thrust sort+reduce, CUB "
      "radix sort: %d failed checks; direct cudaMalloc calls %d\n",
      rounds, failures, g_direct_mallocs);
  return failures == 0 ? 0 : 1;
}
