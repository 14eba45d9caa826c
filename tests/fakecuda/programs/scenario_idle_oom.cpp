// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_idle_oom.cpp: idle_oom_wait, under the shim with idle_release_ms
// (whole segments) on a small fake device (FAKECUDA_DEVICE_MEMORY) and a slow cuMemFree_v2
// (FAKECUDA_SLOW=cuMemFree_v2:MS). A large block's segment is freed; the idle-release thread
// takes it off the pool's books and gives it back without the pool's lock, inside the slow
// cuMemFree_v2; the same size asked for meanwhile finds the device full (the memory on its way
// back is still the driver's), waits for the give-back and gets memory
// (CudaBackend::waited_for_give_back). Without that wait the program would get an OOM the shim
// made. Against the fake alone: a slow cuMemFree_v2 keeps its memory used while it sleeps (what
// makes the case). Not a timing test of the shim: the slow call only widens a window.
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kBlock = 150 * kMiB;  // two do not fit in FAKECUDA_DEVICE_MEMORY=256M

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Free {
  const Driver* d;
  CUcontext context;
  CUdeviceptr p;
  CUresult rc = CUDA_ERROR_UNKNOWN;
};

void* free_thread(void* arg) {
  auto* f = static_cast<Free*>(arg);
  f->rc = f->d->CtxSetCurrent(f->context);
  if (f->rc == CUDA_SUCCESS) f->rc = f->d->MemFree(f->p);
  return nullptr;
}

int fake_alone(const Driver& d) {
  CUdeviceptr p = 0;
  FC_OK(d, d.MemAlloc(&p, kBlock));
  CUcontext context = nullptr;
  FC_OK(d, d.CtxGetCurrent(&context));
  Free f{&d, context, p};
  const unsigned long long before = d.calls("cuMemFree_v2");
  pthread_t thread;
  FC_CHECK(pthread_create(&thread, nullptr, free_thread, &f) == 0, "pthread_create");
  FC_CHECK(calls_exceed(d, "cuMemFree_v2", before, 10000),
           "the thread's cuMemFree_v2 was not counted in 10 s");
  CUdeviceptr q = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&q, kBlock), CUDA_ERROR_OUT_OF_MEMORY);
  pthread_join(thread, nullptr);
  FC_OK(d, f.rc);
  FC_OK(d, d.MemAlloc(&q, kBlock));
  FC_OK(d, d.MemFree(q));
  say("while a slow cuMemFree_v2 of %zu MiB slept, the same size did not fit; after it, it did",
      kBlock / kMiB);
  return 0;
}

int under_shim(const Driver& d) {
  require_conf("idle_release_ms:", "expandable_segments:True");
  const CUdeviceptr first = alloc_ok(d, kBlock);
  stamp(first, kBlock, 0x0a1);
  const unsigned long long before = d.calls("cuMemFree_v2");
  FC_OK(d, d.MemFree(first));
  // Quiet until the idle-release thread is inside its (slow) cuMemFree_v2 of that segment.
  FC_CHECK(calls_exceed(d, "cuMemFree_v2", before, 10000),
           "the idle-release thread freed nothing in 10 s");
  const Clock::time_point start = Clock::now();
  CUdeviceptr again = 0;
  const CUresult rc = d.MemAlloc(&again, kBlock);
  const double ms = ms_since(start);
  FC_CHECK(rc == CUDA_SUCCESS,
           "cuMemAlloc_v2 of %zu bytes while the idle-release thread gives the "
           "same amount back returned %s after %.0f ms",
           kBlock, result_name(d, rc).c_str(), ms);
  FC_CHECK(d.calls("cuMemFree_v2") > before, "no cuMemFree_v2 by the thread");
  stamp(again, kBlock, 0x0a2);
  FC_CHECK(stamped(again, kBlock, 0x0a2), "the second block's stamp");
  say("%zu MiB freed, the idle-release thread inside a slow cuMemFree_v2: the same size, asked "
      "for meanwhile, found the device full and got memory after %.0f ms",
      kBlock / kMiB, ms);
  FC_OK(d, d.MemFree(again));
  return 0;
}

}  // namespace

int idle_oom_wait(const Driver& d, Mode mode) {
  return mode == Mode::kFake ? fake_alone(d) : under_shim(d);
}

}  // namespace fakecuda_test
