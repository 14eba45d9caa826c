// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenario_faults.cpp: the scenario that fault_sweep.sh runs once per
// injected driver fault (FAKECUDA_FAIL, tests/fakecuda/src/faults.cpp): allocation and free
// patterns with reuse, a blocking, a non-blocking and a prioritized stream with work and events
// (held streams for work not yet run), cuMemGetInfo, out of memory with the cache given back, a
// created context freed into from another one and destroyed with a block live, a primary context
// reset seen by a hook and one no hook sees. One thread, so the calls before a fault are the same
// in every run. Every driver call of the program is allowed to fail only with the injected error
// (or out of memory, for an allocation) and only when the fault fired during it; it is then tried
// once more and must succeed (an allocation that fails after a release the driver refused ends
// the scenario early: that memory is lost). What must hold whatever failed: live blocks are
// disjoint, mapped and keep their data; a block freed with work queued on a held non-blocking
// stream is not handed out before that work ran; all freed, cuMemGetInfo's free is the total; after
// a reset nothing stays allocated. Not a check of which calls the shim makes (the sweep's counts),
// nor a thread test.
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "scenarios.h"

namespace fakecuda_test {

namespace {

// Memory the driver kept after a release it refused is lost to the pool (it cannot tell whether
// the driver freed it: asking again could free another allocation): an allocation then fails
// that would have worked, and the rest of the scenario cannot run.
struct MemoryLost {};

struct Live {
  CUdeviceptr p;
  size_t n;
  uint64_t tag;
};

class FaultRun {
 public:
  explicit FaultRun(const Driver& d) : d_(d) {
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    FC_CHECK(lib != nullptr, "libcuda.so.1 is not loaded");
    fired_ = reinterpret_cast<decltype(fired_)>(dlsym(lib, "fakecuda_faults_fired"));
    last_ = reinterpret_cast<decltype(last_)>(dlsym(lib, "fakecuda_last_fault"));
    FC_CHECK(fired_ != nullptr && last_ != nullptr, "the fake has no fault control functions");
    if (const char* spec = std::getenv("FAKECUDA_FAIL")) {
      armed_ = std::string(spec).substr(0, std::string(spec).find(':'));
    }
  }

  // A driver call that may fail only by the injected fault (out of memory too when `alloc`).
  template <class Call>
  CUresult run(const char* what, Call&& call, bool alloc = false) {
    const unsigned long long before = fired_();
    const CUresult rc = call();
    if (rc == CUDA_SUCCESS) return rc;
    if (alloc && fired_() == before && release_refused()) throw MemoryLost{};
    FC_CHECK(fired_() != before, "%s failed with %s, and no fault was injected during it", what,
             result_name(d_, rc).c_str());
    FC_CHECK(rc == last_() || (alloc && rc == CUDA_ERROR_OUT_OF_MEMORY),
             "%s failed with %s; the fault injected was %s", what, result_name(d_, rc).c_str(),
             result_name(d_, last_()).c_str());
    say("%s: %s (the injected fault), tried again", what, result_name(d_, rc).c_str());
    return rc;
  }
  // The same, tried once more after an allowed failure: then it must succeed.
  template <class Call>
  void must(const char* what, Call&& call, bool alloc = false) {
    if (run(what, call, alloc) == CUDA_SUCCESS) return;
    const CUresult again = call();
    FC_CHECK(again == CUDA_SUCCESS, "%s failed again: %s", what, result_name(d_, again).c_str());
  }
  // must() for a call that allocates or creates (out of memory is an allowed failure too).
  template <class Call>
  void must_make(const char* what, Call&& call) {
    must(what, call, true);
  }

  // Whether a fault fired in a call that gives memory back to the driver (the driver then keeps
  // it: a leak the shim can only report, docs/shim.md "Lifecycle").
  bool release_refused() const {
    return fired_() > 0 && (armed_ == "cuMemFree_v2" || armed_ == "cuMemUnmap" ||
                            armed_ == "cuMemRelease" || armed_ == "cuMemAddressFree");
  }
  // Whether a query said the queued work failed (it is then over, as on a GPU; a synchronize's
  // failure comes after its wait: src/faults.cpp).
  bool work_failed() const {
    return fired_() > 0 && last_() != CUDA_ERROR_NOT_READY && armed_ == "cuEventQuery";
  }

  CUdeviceptr alloc(size_t n) {
    CUdeviceptr p = 0;
    auto call = [&] { return d_.MemAlloc(&p, n); };
    must("cuMemAlloc_v2", call, true);
    track(p, n);
    return p;
  }
  // An allocation that may run out of memory: 0 then.
  CUdeviceptr alloc_or_oom(size_t n) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      const unsigned long long before = fired_();
      CUdeviceptr p = 0;
      const CUresult rc = d_.MemAlloc(&p, n);
      if (rc == CUDA_SUCCESS) {
        track(p, n);
        return p;
      }
      if (rc == CUDA_ERROR_OUT_OF_MEMORY && fired_() == before) return 0;
      if (fired_() == before && release_refused()) throw MemoryLost{};
      FC_CHECK(fired_() != before && (rc == last_() || rc == CUDA_ERROR_OUT_OF_MEMORY),
               "cuMemAlloc_v2(%zu) failed with %s, not by the injected fault", n,
               result_name(d_, rc).c_str());
    }
    FC_CHECK(false, "cuMemAlloc_v2(%zu) failed twice", n);
    return 0;
  }
  // Work changed a block's data: stamp it again.
  void touched(CUdeviceptr p) {
    for (Live& b : live_) {
      if (b.p == p) stamp(p, b.n, b.tag);
    }
  }
  void free(CUdeviceptr p) {
    for (size_t i = 0; i < live_.size(); ++i) {
      if (live_[i].p != p) continue;
      FC_CHECK(stamped(p, live_[i].n, live_[i].tag), "block 0x%llx lost its data before its free",
               static_cast<unsigned long long>(p));
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
      must("cuMemFree_v2", [&] { return d_.MemFree(p); });
      return;
    }
    FC_CHECK(false, "free of 0x%llx, not live", static_cast<unsigned long long>(p));
  }
  void free_all() {
    while (!live_.empty()) free(live_.back().p);
  }
  void drop_all() { live_.clear(); }  // their context was reset
  void forget(CUdeviceptr p) {        // its context went
    for (size_t i = 0; i < live_.size(); ++i) {
      if (live_[i].p == p) live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  void check_all(const char* when) {
    for (const Live& b : live_) {
      FC_CHECK(stamped(b.p, b.n, b.tag), "%s: block 0x%llx (%zu) lost its data", when,
               static_cast<unsigned long long>(b.p), b.n);
      CUdeviceptr base = 0;
      size_t size = 0;
      must("cuMemGetAddressRange_v2", [&] { return d_.MemGetAddressRange(&base, &size, b.p); });
      FC_CHECK(base == b.p && size >= b.n, "%s: range of 0x%llx is 0x%llx+%zu", when,
               static_cast<unsigned long long>(b.p), static_cast<unsigned long long>(base), size);
    }
  }
  // With nothing live: every byte is free, or (after a refused release) at most the total.
  void check_all_free(const char* when) {
    size_t free = 0, total = 0;
    must("cuMemGetInfo_v2", [&] { return d_.MemGetInfo(&free, &total); });
    if (free != total && release_refused()) {
      say("%s: %zu bytes stay allocated after a release the driver refused", when, total - free);
      return;
    }
    FC_CHECK(free == total, "%s: nothing live, yet free %zu of %zu", when, free, total);
  }
  void check_nothing_allocated(const char* when) {
    const size_t used = d_.bytes_in_use(0);
    if (used != 0 && release_refused()) {
      say("%s: %zu bytes stay allocated after a release the driver refused", when, used);
      return;
    }
    FC_CHECK(used == 0, "%s: %zu bytes still allocated on device 0", when, used);
  }

  const Driver& d() const { return d_; }

 private:
  void track(CUdeviceptr p, size_t n) {
    FC_CHECK(p != 0 && d_.is_live(p) && d_.is_live(p + n - 1), "block 0x%llx (%zu) not mapped",
             static_cast<unsigned long long>(p), n);
    for (const Live& b : live_) {
      FC_CHECK(p + n <= b.p || b.p + b.n <= p, "block 0x%llx (%zu) overlaps live 0x%llx (%zu)",
               static_cast<unsigned long long>(p), n, static_cast<unsigned long long>(b.p), b.n);
    }
    live_.push_back(Live{p, n, ++tag_});
    stamp(p, n, tag_);
  }

  const Driver& d_;
  unsigned long long (*fired_)() = nullptr;
  CUresult (*last_)() = nullptr;
  std::string armed_;
  std::vector<Live> live_;
  uint64_t tag_ = 0x5eed;
};

void patterns(FaultRun& f) {
  say("allocation patterns: sizes from 512 B to 25 MiB, half freed, allocated again");
  const size_t sizes[] = {512,          1000,     4 * kKiB,  100 * kKiB, kMiB,
                          3 * kMiB / 2, 3 * kMiB, 12 * kMiB, 25 * kMiB};
  std::vector<CUdeviceptr> blocks;
  for (int round = 0; round < 2; ++round) {
    for (size_t n : sizes) blocks.push_back(f.alloc(n));
  }
  for (size_t i = 0; i < blocks.size(); i += 2) f.free(blocks[i]);
  for (size_t n : sizes) f.alloc(n);
  f.check_all("after reuse");
  f.free_all();
  f.check_all_free("patterns freed");
}

void streams(FaultRun& f, Mode mode) {
  const Driver& d = f.d();
  say("streams: blocking, non-blocking (held), prioritized; events, a join, a destroy");
  CUstream blocking = nullptr, nonblocking = nullptr, prioritized = nullptr;
  f.must_make("cuStreamCreate", [&] { return d.StreamCreate(&blocking, CU_STREAM_DEFAULT); });
  f.must_make("cuStreamCreate",
              [&] { return d.StreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING); });
  f.must_make("cuStreamCreateWithPriority",
              [&] { return d.StreamCreateWithPriority(&prioritized, CU_STREAM_NON_BLOCKING, -1); });
  CUevent event = nullptr;
  f.must_make("cuEventCreate", [&] { return d.EventCreate(&event, CU_EVENT_DISABLE_TIMING); });
  auto work = [&](CUdeviceptr p, size_t n, CUstream s) {
    f.must("cuMemsetD8Async", [&] { return d.MemsetD8Async(p, 7, n, s); });
    f.touched(p);
  };

  // Work on the blocking stream, then free: the block may come back.
  CUdeviceptr x = f.alloc(kMiB);
  work(x, kMiB, blocking);
  f.free(x);
  f.alloc(kMiB);

  // Work on the held non-blocking stream, then free: not handed out before the work ran.
  FC_CHECK(d.hold_stream(nonblocking, 1) == 0, "hold failed");
  CUdeviceptr z = f.alloc(2 * kMiB);
  work(z, 2 * kMiB, nonblocking);
  const unsigned long long syncs = d.sync_count();
  f.free(z);
  for (int i = 0; i < 3; ++i) {
    if (f.alloc(2 * kMiB) != z || mode != Mode::kShim) continue;
    FC_CHECK(d.sync_count() != syncs || f.work_failed(),
             "a block freed with work queued on a held non-blocking stream was handed out");
    say("the freed block came back after a synchronize (or a query that reported failure)");
  }
  FC_CHECK(d.hold_stream(nonblocking, 0) == 0, "release failed");
  f.alloc(2 * kMiB);
  f.check_all("after the held stream ran");

  // A join: work on held N, an event after it, the legacy stream made to wait on it.
  FC_CHECK(d.hold_stream(nonblocking, 1) == 0, "hold failed");
  CUdeviceptr w = f.alloc(kMiB);
  work(w, kMiB, nonblocking);
  f.must("cuEventRecord", [&] { return d.EventRecord(event, nonblocking); });
  f.must("cuStreamWaitEvent", [&] { return d.StreamWaitEvent(nullptr, event, 0); });
  f.free(w);
  f.alloc(kMiB);
  // Not ready (held) is a true answer too.
  f.run("cuEventQuery", [&] {
    const CUresult rc = d.EventQuery(event);
    return rc == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : rc;
  });
  f.must("cuEventSynchronize", [&] { return d.EventSynchronize(event); });
  FC_CHECK(d.hold_stream(nonblocking, 0) == 0, "release failed");

  // Work on the prioritized stream (the shim orders it after its barrier first), then freed.
  CUdeviceptr m = f.alloc(kMiB);
  work(m, kMiB, prioritized);
  f.free(m);
  f.alloc(kMiB);
  f.must("cuStreamSynchronize", [&] { return d.StreamSynchronize(prioritized); });

  // A non-blocking stream destroyed with work queued (held), after a free.
  FC_CHECK(d.hold_stream(nonblocking, 1) == 0, "hold failed");
  CUdeviceptr v = f.alloc(kMiB);
  work(v, kMiB, nonblocking);
  f.free(v);
  f.must("cuStreamDestroy_v2", [&] { return d.StreamDestroy(nonblocking); });
  f.alloc(kMiB);
  f.must("cuEventDestroy_v2", [&] { return d.EventDestroy(event); });
  f.must("cuStreamDestroy_v2", [&] { return d.StreamDestroy(blocking); });
  f.must("cuStreamDestroy_v2", [&] { return d.StreamDestroy(prioritized); });
  f.check_all("after the streams");
  f.free_all();
  f.check_all_free("streams freed");
}

void out_of_memory(FaultRun& f) {
  const size_t cap = f.d().capacity(0);
  FC_CHECK(cap == 256 * kMiB, "run with FAKECUDA_DEVICE_MEMORY=256M (capacity %zu)", cap);
  say("out of memory on a 256 MiB device, then the cache given back for larger blocks");
  std::vector<CUdeviceptr> big;
  for (int i = 0; i < 8; ++i) {
    const CUdeviceptr p = f.alloc_or_oom(40 * kMiB);
    if (p == 0) break;
    big.push_back(p);
  }
  FC_CHECK(!big.empty(), "not even one 40 MiB block on an empty 256 MiB device");
  for (size_t i = 1; i < big.size(); ++i) f.free(big[i]);
  for (int i = 0; i < 3; ++i) f.alloc(60 * kMiB);
  FC_CHECK(f.alloc_or_oom(300 * kMiB) == 0, "300 MiB on a 256 MiB device");
  f.check_all("after out of memory");
  f.free_all();
  f.check_all_free("out of memory freed");
}

void contexts(FaultRun& f) {
  const Driver& d = f.d();
  say("a created context: blocks freed from the primary one, destroyed with blocks live");
  CUcontext created = nullptr, popped = nullptr;
  f.must_make("cuCtxCreate", [&] { return d.CtxCreate(&created, nullptr, 0, 0); });  // now current
  const CUdeviceptr a = f.alloc(kMiB);
  const CUdeviceptr b = f.alloc(3 * kMiB);
  f.must("cuCtxPopCurrent", [&] { return d.CtxPopCurrent(&popped); });
  FC_CHECK(popped == created, "popped another context");
  f.free(a);  // into the created context's pool, from the primary context
  f.alloc(kMiB);
  f.must("cuCtxPushCurrent", [&] { return d.CtxPushCurrent(created); });
  const CUdeviceptr e = f.alloc(2 * kMiB);
  f.check_all("two contexts");
  f.must("cuCtxPopCurrent", [&] { return d.CtxPopCurrent(&popped); });
  f.must("cuCtxDestroy", [&] { return d.CtxDestroy(created); });
  f.forget(b);
  f.forget(e);
  FC_CHECK((!d.is_live(b) && !d.is_live(e)) || f.release_refused(),
           "blocks of a destroyed context are still mapped");
  f.free_all();
  f.check_all_free("after the created context went");  // its cached memory too
}

void resets(FaultRun& f) {
  const Driver& d = f.d();
  say("a primary context reset a hook sees, one no hook sees, then a new pool");
  f.free(f.alloc(64 * kMiB));  // cached under the shim
  f.alloc(kMiB);
  f.must("cuDevicePrimaryCtxReset", [&] { return d.DevicePrimaryCtxReset(0); });
  f.drop_all();
  f.check_nothing_allocated("after a reset a hook saw");
  f.check_all_free("after a reset a hook saw");
  f.free(f.alloc(64 * kMiB));
  f.alloc(kMiB);
  FC_CHECK(d.reset_primary_unseen(0) == 0, "fakecuda_reset_primary_unseen failed");
  f.drop_all();
  f.check_all_free("after a reset no hook saw");
  f.check_nothing_allocated("after a reset no hook saw");
  f.alloc(5 * kMiB);
  f.alloc(kMiB);
  f.check_all("a new pool");
  f.free_all();
  f.must("cuDevicePrimaryCtxReset", [&] { return d.DevicePrimaryCtxReset(0); });
  f.check_nothing_allocated("at the end");
}

}  // namespace

int faults(const Driver& d, Mode mode) {
  FaultRun f(d);
  d.reset_counters();  // with FAKECUDA_FAIL_FROM_RESET=1, faults start here
  try {
    patterns(f);
    streams(f, mode);
    out_of_memory(f);
    contexts(f);
    resets(f);
  } catch (const MemoryLost&) {
    say("out of memory after a release the driver refused: the memory is lost, the rest skipped");
  }
  return 0;
}

}  // namespace fakecuda_test
