// SPDX-License-Identifier: Apache-2.0
// tests/gpu/late_stream.cu: reuse safety when the new user's stream did not exist at the free. The
// process uses the legacy default stream only; a kernel on it spins for SPIN_MS and then sums block
// X. At once the host frees X, creates a non-blocking stream (or takes the per-thread default
// stream), allocates Y of the same size (Y == X when the pool or the thread's cache hands X out
// again) and fills Y with another pattern on that stream. The spinning kernel must still see X's
// pattern: a non-blocking stream is not ordered after the legacy stream's work, so the shim must
// order it when the stream is created (reuse_fence:auto), as the driver's waiting cudaFree would.
// One case per process, so that each starts with nothing but legacy-stream work behind it. Before
// the case, a few allocation+free pairs of the same size let reuse_fence:auto pass its first
// barrier (until then every free waits on one), so X's free needs no fence of its own.
//
//   late_stream [--size BYTES] [--per-thread] [--spin-ms MS] [--expect-reuse]
//
// --expect-reuse: fail unless Y == X (under the shim: the case only means something then).
// Exit status: 0 the old data survived and the new block holds its pattern; 3 the only failure is
// overwritten old data (what reuse_fence:none may do); 1 any other failure.
#include <string>

#include "common.h"

int main(int argc, char** argv) {
  size_t size = 4096;
  bool per_thread = false;
  bool expect_reuse = false;
  double spin_ms = 200;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--size" && i + 1 < argc) {
      size = static_cast<size_t>(strtoull(argv[++i], nullptr, 10));
    } else if (a == "--per-thread") {
      per_thread = true;
    } else if (a == "--expect-reuse") {
      expect_reuse = true;
    } else if (a == "--spin-ms" && i + 1 < argc) {
      spin_ms = atof(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: late_stream [--size BYTES] [--per-thread] [--spin-ms MS] [--expect-reuse]\n");
      return 2;
    }
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  print_banner("late_stream");

  unsigned long long* d_sums = nullptr;  // [0]: expected, [1]: what the spinning kernel saw
  CHECK(cudaMalloc(&d_sums, 2 * sizeof *d_sums));
  CHECK(cudaMemset(d_sums, 0, 2 * sizeof *d_sums));
  unsigned long long* d_err = nullptr;
  CHECK(cudaMalloc(&d_err, sizeof *d_err));
  CHECK(cudaMemset(d_err, 0, sizeof *d_err));

  const size_t nwords = size / 4;
  for (int i = 0; i < 4; ++i) {
    void* warm = nullptr;
    CHECK(cudaMalloc(&warm, size));
    CHECK(cudaFree(warm));
  }
  void* x = nullptr;
  CHECK(cudaMalloc(&x, size));
  fill_async(x, size, 111, cudaStreamLegacy);
  spin_then_sum<<<64, 256, 0, cudaStreamLegacy>>>(static_cast<const uint32_t*>(x), nwords, 0,
                                                  d_sums);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());

  // The test proper.
  const auto spin_ns = static_cast<unsigned long long>(spin_ms * 1e6);
  spin_then_sum<<<8, 256, 0, cudaStreamLegacy>>>(static_cast<const uint32_t*>(x), nwords, spin_ns,
                                                 d_sums + 1);
  CHECK_LAUNCH();
  const double t0 = now_s();
  CHECK(cudaFree(x));
  const double free_ms = (now_s() - t0) * 1e3;
  cudaStream_t fresh = cudaStreamPerThread;
  if (!per_thread) CHECK(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking));
  void* y = nullptr;
  CHECK(cudaMalloc(&y, size));
  fill_async(y, size, 222, fresh);
  CHECK(cudaDeviceSynchronize());

  unsigned long long sums[2];
  CHECK(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
  check_async(y, size, 222, d_err, cudaStreamLegacy);
  CHECK(cudaDeviceSynchronize());
  const unsigned long long bad_new = read_counter(d_err);
  const bool survived = sums[0] == sums[1];
  printf(
      "late_stream: size %zu, new stream %s, new==X %s, free %.3f ms, old data %s, new block "
      "bad words %llu\n",
      size, per_thread ? "per-thread default" : "non-blocking created after the free",
      y == x ? "yes" : "no", free_ms, survived ? "survived" : "CORRUPTED", bad_new);
  CHECK(cudaFree(y));
  if (!per_thread) CHECK(cudaStreamDestroy(fresh));
  if (bad_new != 0) return 1;
  if (expect_reuse && y != x) {
    printf("ERROR: the new block is not X (--expect-reuse)\n");
    return 1;
  }
  return survived ? 0 : 3;
}
