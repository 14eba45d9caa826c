// SPDX-License-Identifier: Apache-2.0
// tests/gpu/fence_shortcuts.cu: the shortcuts reuse_fence:auto takes, checked by data on a GPU.
// Each case is a hazard the shortcut must not open: block X holds pattern A; a kernel that spins
// SPIN_MS and then reads X is queued where the case says; the host frees X at once, allocates Y of
// the same size (Y == X when the pool reused X: the shortcut was taken, memory spared) and fills Y
// with pattern B on the NEW stream. The checksum the spinning kernel computed must be A's.
//
//   join     the spin runs on non-blocking stream N, an event recorded on N after it is waited
//            for on the legacy stream (cuDNN's and PyTorch's side streams do this), then the free.
//            The shim reuses X without waiting (Y == X expected).
//   idle     a non-blocking stream exists but never had work; the spin runs on the legacy stream.
//            X is reused at the next allocation (Y == X expected).
//   blocking the spin runs on a blocking stream, X is reused by ordering (Y == X expected).
//   unjoined the spin runs on N and nothing joins it: X must not be reused before it ends.
// NEW, for every case: the legacy stream; a non-blocking stream M that was never made to follow
// the legacy stream (the shim must order it after its barrier before the fill); N after a fork
// (an event recorded on the legacy stream after the allocation, waited for on N); a blocking
// stream.
//
//   fence_shortcuts [--spin-ms MS] [--expect-reuse]
//
// --expect-reuse: also fail a join, idle or blocking case where Y != X (the shim did not take the
// shortcut: memory it could have spared). Exit status: 0 all good; 3 the only failures are
// overwritten old data (what reuse_fence:none may do); 1 any other failure.
#include <string>

#include "common.h"

namespace {

enum Case { kJoin, kIdle, kBlocking, kUnjoined, kCases };
const char* case_name[] = {"join", "idle", "blocking", "unjoined"};
enum New { kLegacy, kFreeRunning, kForked, kBlockingNew, kNews };
const char* new_name[] = {"legacy", "nonblocking-unordered", "nonblocking-forked", "blocking"};

}  // namespace

int main(int argc, char** argv) {
  double spin_ms = 150.0;
  bool expect_reuse = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--spin-ms" && i + 1 < argc) {
      spin_ms = atof(argv[++i]);
    } else if (a == "--expect-reuse") {
      expect_reuse = true;
    } else {
      fprintf(stderr, "usage: fence_shortcuts [--spin-ms MS] [--expect-reuse]\n");
      return 2;
    }
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  print_banner("fence_shortcuts");

  // idle_stream: made first, never used. n: the side stream of the join/unjoined cases. m: gets
  // new work only, never made to follow anything. blocking: a blocking stream.
  cudaStream_t idle_stream, n, m, blocking;
  CHECK(cudaStreamCreateWithFlags(&idle_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&n, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&m, cudaStreamNonBlocking));
  CHECK(cudaStreamCreate(&blocking));
  cudaEvent_t on_n, on_legacy;
  CHECK(cudaEventCreateWithFlags(&on_n, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&on_legacy, cudaEventDisableTiming));

  constexpr int kMaxCases = 64;
  unsigned long long* d_sums = nullptr;  // [2c]: expected, [2c+1]: what the spinning kernel saw
  CHECK(cudaMalloc(&d_sums, 2 * kMaxCases * sizeof *d_sums));
  CHECK(cudaMemset(d_sums, 0, 2 * kMaxCases * sizeof *d_sums));
  unsigned long long* d_err = nullptr;
  CHECK(cudaMalloc(&d_err, sizeof *d_err));
  CHECK(cudaDeviceSynchronize());

  const size_t sizes[] = {4096, size_t(64) << 20};
  const unsigned long long spin_ns = static_cast<unsigned long long>(spin_ms * 1e6);
  int n_cases = 0, n_corrupted = 0, n_other = 0, n_same = 0;
  for (size_t size : sizes) {
    for (int k = 0; k < kCases; ++k) {
      for (int w = 0; w < kNews; ++w) {
        const int c = n_cases++;
        const size_t nwords = size / 4;
        void* x = nullptr;
        CHECK(cudaMalloc(&x, size));
        fill_async(x, size, 1000u + c, cudaStreamLegacy);
        spin_then_sum<<<64, 256, 0, cudaStreamLegacy>>>(static_cast<const uint32_t*>(x), nwords, 0,
                                                        d_sums + 2 * c);
        CHECK_LAUNCH();
        CHECK(cudaDeviceSynchronize());

        // The test proper.
        cudaStream_t spin_on = k == kJoin || k == kUnjoined ? n
                               : k == kBlocking            ? blocking
                                                           : cudaStreamLegacy;
        spin_then_sum<<<8, 256, 0, spin_on>>>(static_cast<const uint32_t*>(x), nwords, spin_ns,
                                              d_sums + 2 * c + 1);
        CHECK_LAUNCH();
        if (k == kJoin) {
          CHECK(cudaEventRecord(on_n, n));
          CHECK(cudaStreamWaitEvent(cudaStreamLegacy, on_n, 0));
        }
        const double t0 = now_s();
        CHECK(cudaFree(x));
        void* y = nullptr;
        CHECK(cudaMalloc(&y, size));
        const double t1 = now_s();
        cudaStream_t fresh = w == kLegacy        ? cudaStreamLegacy
                             : w == kFreeRunning ? m
                             : w == kForked      ? n
                                                 : blocking;
        if (w == kForked) {
          CHECK(cudaEventRecord(on_legacy, cudaStreamLegacy));
          CHECK(cudaStreamWaitEvent(n, on_legacy, 0));
        }
        fill_kernel<<<1024, 256, 0, fresh>>>(static_cast<uint32_t*>(y), nwords, 5000u + c);
        CHECK_LAUNCH();
        CHECK(cudaDeviceSynchronize());

        unsigned long long sums[2];
        CHECK(cudaMemcpy(sums, d_sums + 2 * c, sizeof sums, cudaMemcpyDeviceToHost));
        CHECK(cudaMemset(d_err, 0, sizeof *d_err));
        check_async(y, size, 5000u + c, d_err, cudaStreamLegacy);
        CHECK(cudaDeviceSynchronize());
        const unsigned long long bad_new = read_counter(d_err);
        CHECK(cudaFree(y));
        CHECK(cudaDeviceSynchronize());

        const bool same = y == x;
        const bool survived = sums[0] == sums[1];
        const bool shortcut_expected = k != kUnjoined;
        const bool missed = expect_reuse && shortcut_expected && !same;
        n_same += same;
        printf(
            "case %2d size %8zu spin %-8s new %-21s: new==X %-3s free+malloc %7.3f ms, old data "
            "%s, new data %s%s\n",
            c, size, case_name[k], new_name[w], same ? "yes" : "no", (t1 - t0) * 1e3,
            survived ? "survived" : "CORRUPTED", bad_new ? "BAD" : "ok",
            missed ? ", SHORTCUT NOT TAKEN" : "");
        if (!survived) {
          ++n_corrupted;
          printf("ERROR case %d: X was overwritten before the work queued before its free ended\n",
                 c);
        }
        if (bad_new) {
          ++n_other;
          printf("ERROR case %d: the new block has %llu bad words\n", c, bad_new);
        }
        if (missed) {
          ++n_other;
          printf("ERROR case %d: X was not reused (a new block instead)\n", c);
        }
      }
    }
  }
  CHECK(cudaFree(d_sums));
  CHECK(cudaFree(d_err));
  CHECK(cudaEventDestroy(on_n));
  CHECK(cudaEventDestroy(on_legacy));
  for (cudaStream_t s : {idle_stream, n, m, blocking}) CHECK(cudaStreamDestroy(s));
  printf("fence_shortcuts: %d cases, new==X in %d, old data overwritten in %d, other failures %d\n",
         n_cases, n_same, n_corrupted, n_other);
  if (n_other) return 1;
  if (n_corrupted) return 3;
  return 0;
}
