// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_fault_cases.cpp: fault_cases, one focused check per defect the
// fault sweep (fault_sweep.sh, scenario_faults.cpp) found in the shim: each makes the next call
// of one driver entry point fail (fakecuda_fail_call) where the shim makes it, and checks what
// went wrong before the fix. Under the shim only. Cases by setting: default (every case but the
// two below), expandable_segments:True (the device's size, then the default ones: a reset that
// failed left pages allocated), reuse_fence:sync (a context pop).
// Not the sweep itself: each case names the call it fails, so it needs no call counts.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

class Cases {
 public:
  explicit Cases(const Driver& d) : d_(d) {
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    FC_CHECK(lib != nullptr, "libcuda.so.1 is not loaded");
    fail_call_ = reinterpret_cast<decltype(fail_call_)>(dlsym(lib, "fakecuda_fail_call"));
    fired_ = reinterpret_cast<decltype(fired_)>(dlsym(lib, "fakecuda_faults_fired"));
    FC_CHECK(fail_call_ != nullptr && fired_ != nullptr, "the fake has no fault functions");
  }
  // The next call of `name` fails with its default error; then `step` runs; the fault must have
  // fired in it (else the case no longer reaches the call it is about).
  template <class Step>
  void failing(const char* name, Step&& step) {
    const unsigned long long before = fired_();
    FC_CHECK(fail_call_(name, 1, CUDA_SUCCESS) == 0, "fakecuda_fail_call(%s)", name);
    step();
    FC_CHECK(fired_() == before + 1, "the fault of %s did not fire: the case is stale", name);
  }
  // A call that may fail with the injected error once: then it is asked again.
  template <class Call>
  CUresult again_if_failed(Call&& call) {
    const unsigned long long before = fired_();
    const CUresult rc = call();
    return rc != CUDA_SUCCESS && fired_() != before ? call() : rc;
  }
  CUdeviceptr alloc(size_t n) {
    CUdeviceptr p = 0;
    FC_OK(d_, again_if_failed([&] { return d_.MemAlloc(&p, n); }));
    return p;
  }
  void all_free(const char* when) {
    size_t free = 0, total = 0;
    FC_OK(d_, d_.MemGetInfo(&free, &total));
    FC_CHECK(free == total, "%s: nothing live, yet free %zu of %zu", when, free, total);
  }
  void reset() {
    FC_OK(d_, d_.DevicePrimaryCtxReset(0));
    FC_CHECK(d_.bytes_in_use(0) == 0, "%zu bytes left after a reset", d_.bytes_in_use(0));
  }

 private:
  const Driver& d_;
  int (*fail_call_)(const char*, unsigned long long, CUresult) = nullptr;
  unsigned long long (*fired_)() = nullptr;
};

void default_cases(const Driver& d, Cases& c) {
  // Two small blocks of one segment: the second is inside it.
  const CUdeviceptr first = c.alloc(4 * kKiB);
  const CUdeviceptr inner = c.alloc(4 * kKiB);
  FC_CHECK(inner != first, "two blocks at one address");
  CUdeviceptr base = 0;
  size_t size = 0;

  say("cuMemGetAddressRange_v2 whose cuCtxGetCurrent fails: its error, not the segment's range");
  c.failing("cuCtxGetCurrent", [&] {
    const CUresult rc = d.MemGetAddressRange(&base, &size, inner);
    FC_CHECK(rc == CUDA_ERROR_INVALID_VALUE || (rc == CUDA_SUCCESS && base == inner),
             "%s, range 0x%llx", result_name(d, rc).c_str(), static_cast<unsigned long long>(base));
  });

  say("a pool whose cuCtxGetId fails stays: the block's range, then its free");
  c.failing("cuCtxGetId", [&] {
    const CUresult rc = d.MemGetAddressRange(&base, &size, inner);
    FC_CHECK(rc == CUDA_SUCCESS && base == inner, "%s, range 0x%llx", result_name(d, rc).c_str(),
             static_cast<unsigned long long>(base));
  });
  FC_OK(d, d.MemFree(inner));
  FC_OK(d, d.MemFree(first));

  say("cuMemGetInfo_v2 whose cuCtxGetDevice fails: its error, or the pool's idle memory free");
  FC_OK(d, d.MemFree(c.alloc(64 * kMiB)));
  c.failing("cuCtxGetDevice", [&] {
    size_t free = 0, total = 0;
    const CUresult rc = d.MemGetInfo(&free, &total);
    FC_CHECK(rc == CUDA_ERROR_INVALID_VALUE || (rc == CUDA_SUCCESS && free == total),
             "%s, free %zu of %zu", result_name(d, rc).c_str(), free, total);
  });

  say("a non-blocking stream whose pool is not found (cuCtxGetId fails): its creation fails");
  CUstream s = nullptr;
  c.failing("cuCtxGetId", [&] {
    const CUresult rc = d.StreamCreate(&s, CU_STREAM_NON_BLOCKING);
    FC_CHECK(rc == CUDA_ERROR_INVALID_VALUE, "cuStreamCreate: %s", result_name(d, rc).c_str());
  });
  FC_OK(d, d.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  FC_CHECK(d.hold_stream(s, 1) == 0, "hold failed");
  const CUdeviceptr busy = c.alloc(2 * kMiB);
  FC_OK(d, d.MemsetD8Async(busy, 1, 2 * kMiB, s));
  FC_OK(d, d.MemFree(busy));
  CUdeviceptr other[3];
  for (CUdeviceptr& o : other) {
    o = c.alloc(2 * kMiB);
    FC_CHECK(o != busy, "a block with work queued on a held stream was handed out");
  }
  FC_CHECK(d.hold_stream(s, 0) == 0, "release failed");
  for (CUdeviceptr o : other) FC_OK(d, d.MemFree(o));
  FC_OK(d, d.StreamDestroy(s));

  say("a pool whose context went unseen, while cuCtxGetId fails once: asked again, dropped");
  FC_OK(d, d.MemFree(c.alloc(64 * kMiB)));
  FC_CHECK(d.reset_primary_unseen(0) == 0, "fakecuda_reset_primary_unseen failed");
  c.failing("cuCtxGetId", [&] { c.all_free("after a reset no hook saw"); });

  for (const char* check : {"cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxRetain"}) {
    say("a pool made while %s fails: the allocation fails, and the pool goes with a reset", check);
    c.reset();  // the next allocation makes a pool
    c.failing(check, [&] {
      CUdeviceptr p = 0;
      const CUresult rc = d.MemAlloc(&p, kMiB);
      FC_CHECK(rc != CUDA_SUCCESS, "the allocation succeeded with an unchecked pool");
    });
    FC_OK(d, d.MemFree(c.alloc(64 * kMiB)));
    c.reset();
    c.all_free("after the reset");
  }

  say("a reset that fails leaves the pool: a block inside a segment is freed, then the reset");
  const CUdeviceptr a = c.alloc(4 * kKiB);
  const CUdeviceptr b = c.alloc(4 * kKiB);
  FC_OK(d, d.MemFree(c.alloc(64 * kMiB)));
  c.failing("cuDevicePrimaryCtxReset_v2", [&] {
    const CUresult rc = d.DevicePrimaryCtxReset(0);
    FC_CHECK(rc == CUDA_ERROR_INVALID_VALUE, "cuDevicePrimaryCtxReset: %s",
             result_name(d, rc).c_str());
  });
  FC_OK(d, d.MemFree(b));
  FC_OK(d, d.MemFree(a));
  c.reset();
  c.all_free("after the reset");

  say("a destroy that fails leaves the pool: its blocks are freed, then the destroy");
  CUcontext created = nullptr, popped = nullptr;
  FC_OK(d, d.CtxCreate(&created, nullptr, 0, 0));
  const CUdeviceptr x = c.alloc(4 * kKiB);
  const CUdeviceptr y = c.alloc(4 * kKiB);
  FC_OK(d, d.MemFree(c.alloc(64 * kMiB)));
  c.failing("cuCtxDestroy_v2", [&] {
    const CUresult rc = d.CtxDestroy(created);
    FC_CHECK(rc == CUDA_ERROR_INVALID_VALUE, "cuCtxDestroy: %s", result_name(d, rc).c_str());
  });
  FC_OK(d, d.MemFree(y));
  FC_OK(d, d.MemFree(x));
  FC_OK(d, d.CtxPopCurrent(&popped));
  FC_OK(d, d.CtxDestroy(created));
  c.reset();
  c.all_free("after the destroy");
}

void expandable_cases(const Driver& d, Cases& c) {
  say("a pool made while cuDeviceTotalMem_v2 fails still serves its allocations");
  c.reset();
  c.failing("cuDeviceTotalMem_v2", [&] {
    CUdeviceptr p = 0;
    const CUresult rc = c.again_if_failed([&] { return d.MemAlloc(&p, kMiB); });
    FC_CHECK(rc == CUDA_SUCCESS, "cuMemAlloc: %s", result_name(d, rc).c_str());
    FC_OK(d, d.MemFree(p));
  });
  c.reset();
}

void sync_cases(const Driver& d, Cases& c) {
  say("a free into another context's pool whose cuCtxPopCurrent fails: the context stays");
  const CUcontext primary = current(d);
  CUcontext created = nullptr, popped = nullptr;
  FC_OK(d, d.CtxCreate(&created, nullptr, 0, 0));
  const CUdeviceptr p = c.alloc(kMiB);
  FC_OK(d, d.CtxPopCurrent(&popped));
  c.failing("cuCtxPopCurrent_v2", [&] { FC_OK(d, d.MemFree(p)); });  // the sync pushes `created`
  FC_CHECK(current(d) == primary, "the shim left another context current");
  FC_OK(d, d.CtxDestroy(created));
}

}  // namespace

int fault_cases(const Driver& d, Mode mode) {
  if (mode != Mode::kShim) {
    say("fault_cases runs under the shim only");
    return 0;
  }
  const char* conf_env = std::getenv("CUDAPOOL_CONF");
  const std::string conf = conf_env != nullptr ? conf_env : "";
  Cases c(d);
  if (conf.find("expandable_segments:True") != std::string::npos) {
    expandable_cases(d, c);
    default_cases(d, c);
  } else if (conf.find("reuse_fence:sync") != std::string::npos) {
    sync_cases(d, c);
  } else {
    default_cases(d, c);
  }
  return 0;
}

}  // namespace fakecuda_test
