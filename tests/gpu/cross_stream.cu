// SPDX-License-Identifier: Apache-2.0
// tests/gpu/cross_stream.cu: the reuse-safety test. A plain cudaFree is synchronous in the real
// driver (it waits for all queued work); under the shim it returns at once, so the pool must not
// hand the block to new work before the work queued before the free has finished.
//
// Each case: block X (SIZE bytes) holds pattern A and its checksum is known. A kernel is queued on
// the OTHER stream that spins for SPIN_MS and only then reads X and writes X's checksum. At once
// the host calls cudaFree(X), cudaMalloc(SIZE) (Y; Y == X when the pool reuses X) and queues on the
// NEW stream a kernel that fills Y with pattern B. After a device synchronize the checksum the
// spinning kernel computed must be pattern A's (else the old data was overwritten: the pool reused
// X too early), and Y must hold pattern B.
//   OTHER: a blocking stream (cudaStreamCreate), a non-blocking stream, the per-thread default
//          stream (cudaStreamPerThread).
//   NEW:   the legacy default stream (cudaStreamLegacy), another non-blocking stream.
//   SIZE:  4 KiB (small pool) and 64 MiB (large pool).
//
//   cross_stream [--expect-fast-free] [--spin-ms MS]
//
// --expect-fast-free: also fail a case whose cudaFree took more than a quarter of the spin (the
// shim with reuse_fence:auto must not wait for the kernel inside cudaFree).
// Exit status: 0 all cases good; 3 the only failures are overwritten old data (what
// reuse_fence:none may do); 1 any other failure (CUDA error, bad new data, slow free).
#include <string>

#include "common.h"

namespace {

enum Other { OTHER_BLOCKING, OTHER_NONBLOCKING, OTHER_PER_THREAD };
enum New { NEW_LEGACY, NEW_NONBLOCKING };
const char* other_name[] = {"blocking-stream", "nonblocking-stream", "per-thread-default"};
const char* new_name[] = {"legacy-default", "second-stream"};  // non-blocking (blocking with
                                                               // --blocking-only)

}  // namespace

int main(int argc, char** argv) {
  bool expect_fast_free = false;
  // --blocking-only: the process creates no non-blocking stream; the other stream is a blocking
  // stream or the per-thread default stream and the new work goes to the legacy stream or a
  // second blocking stream. This is where reuse_fence:auto may skip its barrier.
  bool blocking_only = false;
  double spin_ms = 200.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--expect-fast-free") {
      expect_fast_free = true;
    } else if (a == "--blocking-only") {
      blocking_only = true;
    } else if (a == "--spin-ms" && i + 1 < argc) {
      spin_ms = atof(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: cross_stream [--expect-fast-free] [--blocking-only] [--spin-ms MS]\n");
      return 2;
    }
  }

  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  print_banner("cross_stream");
  int concurrent = 0;
  CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentKernels, 0));
  printf("cross_stream: concurrent kernels %d, spin %.0f ms, expect fast free: %s\n", concurrent,
         spin_ms, expect_fast_free ? "yes" : "no");

  cudaStream_t s_blocking, s_nonblocking = nullptr, s_nonblocking2 = nullptr;
  CHECK(cudaStreamCreate(&s_blocking));
  if (blocking_only) {
    CHECK(cudaStreamCreate(&s_nonblocking2));  // a second *blocking* stream for the new work
  } else {
    CHECK(cudaStreamCreateWithFlags(&s_nonblocking, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s_nonblocking2, cudaStreamNonBlocking));
  }

  constexpr int MAX_CASES = 64;
  unsigned long long* d_sums = nullptr;  // [2*c]: expected, [2*c+1]: what the spinning kernel saw
  CHECK(cudaMalloc(&d_sums, 2 * MAX_CASES * sizeof *d_sums));
  CHECK(cudaMemset(d_sums, 0, 2 * MAX_CASES * sizeof *d_sums));
  unsigned long long* d_err = nullptr;
  CHECK(cudaMalloc(&d_err, sizeof *d_err));
  CHECK(cudaDeviceSynchronize());

  const size_t sizes[] = {4096, size_t(64) << 20};
  const unsigned long long spin_ns = static_cast<unsigned long long>(spin_ms * 1e6);
  int n_cases = 0, n_corrupted = 0, n_other_fail = 0, n_same = 0;

  for (size_t size : sizes) {
    for (int o = 0; o < 3; ++o) {
      if (blocking_only && o == OTHER_NONBLOCKING) continue;
      for (int nw = 0; nw < 2; ++nw) {
        const int c = n_cases++;
        cudaStream_t other = o == OTHER_BLOCKING      ? s_blocking
                             : o == OTHER_NONBLOCKING ? s_nonblocking
                                                      : cudaStreamPerThread;
        cudaStream_t fresh = nw == NEW_LEGACY ? cudaStreamLegacy : s_nonblocking2;
        const size_t nwords = size / 4;
        const uint32_t seed_a = 1000u + c, seed_b = 5000u + c;

        // X with pattern A and its checksum, all finished before the test proper.
        void* x = nullptr;
        CHECK(cudaMalloc(&x, size));
        fill_async(x, size, seed_a, cudaStreamLegacy);
        spin_then_sum<<<64, 256, 0, cudaStreamLegacy>>>(static_cast<const uint32_t*>(x), nwords, 0,
                                                        d_sums + 2 * c);
        CHECK_LAUNCH();
        CHECK(cudaDeviceSynchronize());

        // The test proper: nothing between these calls but timing.
        double t0 = now_s();
        spin_then_sum<<<8, 256, 0, other>>>(static_cast<const uint32_t*>(x), nwords, spin_ns,
                                            d_sums + 2 * c + 1);
        CHECK_LAUNCH();
        double t1 = now_s();
        CHECK(cudaFree(x));
        double t2 = now_s();
        void* y = nullptr;
        CHECK(cudaMalloc(&y, size));
        double t3 = now_s();
        fill_kernel<<<1024, 256, 0, fresh>>>(static_cast<uint32_t*>(y), nwords, seed_b);
        CHECK_LAUNCH();
        CHECK(cudaDeviceSynchronize());
        double t4 = now_s();

        unsigned long long sums[2];
        CHECK(cudaMemcpy(sums, d_sums + 2 * c, sizeof sums, cudaMemcpyDeviceToHost));
        CHECK(cudaMemset(d_err, 0, sizeof *d_err));
        CHECK(cudaDeviceSynchronize());
        check_async(y, size, seed_b, d_err, cudaStreamLegacy);
        CHECK(cudaDeviceSynchronize());
        unsigned long long bad_new = read_counter(d_err);
        CHECK(cudaFree(y));
        CHECK(cudaDeviceSynchronize());

        bool same = (y == x);
        bool survived = (sums[0] == sums[1]);
        double free_ms = (t2 - t1) * 1e3, malloc_ms = (t3 - t2) * 1e3, total_ms = (t4 - t0) * 1e3;
        bool slow_free = expect_fast_free && free_ms > spin_ms / 4;
        n_same += same;
        printf(
            "case %2d size %8zu other %-18s new %-19s: new==X %-3s free %8.3f ms, malloc %8.3f "
            "ms, launch..sync %7.1f ms, old data %s, new data %s%s\n",
            c, size, other_name[o], new_name[nw], same ? "yes" : "no", free_ms, malloc_ms, total_ms,
            survived ? "survived" : "CORRUPTED", bad_new ? "BAD" : "ok",
            slow_free ? ", FREE TOO SLOW" : "");
        if (!survived) {
          ++n_corrupted;
          printf(
              "ERROR case %d: the spinning kernel saw checksum %#llx, expected %#llx: X was "
              "overwritten before the work queued before cudaFree(X) finished\n",
              c, sums[1], sums[0]);
        }
        if (bad_new) {
          ++n_other_fail;
          printf("ERROR case %d: the new block has %llu bad words\n", c, bad_new);
        }
        if (slow_free) {
          ++n_other_fail;
          printf("ERROR case %d: cudaFree took %.3f ms (limit %.1f ms with --expect-fast-free)\n",
                 c, free_ms, spin_ms / 4);
        }
        if (total_ms < spin_ms * 0.8)
          printf(
              "NOTE case %d: launch..sync took %.1f ms, less than the %.0f ms spin: the "
              "global timer may be off\n",
              c, total_ms, spin_ms);
      }
    }
  }

  CHECK(cudaFree(d_sums));
  CHECK(cudaFree(d_err));
  CHECK(cudaStreamDestroy(s_blocking));
  if (s_nonblocking != nullptr) CHECK(cudaStreamDestroy(s_nonblocking));
  CHECK(cudaStreamDestroy(s_nonblocking2));
  printf("cross_stream: %d cases, new==X in %d, old data overwritten in %d, other failures %d\n",
         n_cases, n_same, n_corrupted, n_other_fail);
  if (n_other_fail) return 1;
  if (n_corrupted) return 3;
  return 0;
}
