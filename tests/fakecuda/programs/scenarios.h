// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenarios.h: the driver entry points a test program holds (filled by
// cudart_like through cuGetProcAddress_v2, by lcuda_program from its link), the fake's control
// functions, the check helpers, and the scenarios both programs run. Not a test framework: a
// failed check prints what was expected and exits 1.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fakecuda_control.h"

namespace fakecuda_test {

struct Driver {
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&::cuDeviceTotalMem) DeviceTotalMem = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease = nullptr;
  decltype(&::cuDevicePrimaryCtxReset) DevicePrimaryCtxReset = nullptr;
  decltype(&::cuCtxGetCurrent) CtxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxGetDevice) CtxGetDevice = nullptr;
  decltype(&::cuCtxPushCurrent) CtxPushCurrent = nullptr;
  decltype(&::cuCtxPopCurrent) CtxPopCurrent = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuCtxCreate) CtxCreate = nullptr;
  decltype(&::cuCtxDestroy) CtxDestroy = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemGetInfo) MemGetInfo = nullptr;
  decltype(&::cuMemGetAddressRange) MemGetAddressRange = nullptr;
  decltype(&::cuPointerGetAttribute) PointerGetAttribute = nullptr;
  decltype(&::cuPointerGetAttributes) PointerGetAttributes = nullptr;
  decltype(&::cuMemsetD8) MemsetD8 = nullptr;
  // Stream-ordered, on the stream given (0: the legacy default stream): work the shim's stream
  // hooks see.
  decltype(&::cuMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&::cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamCreateWithPriority) StreamCreateWithPriority = nullptr;
  decltype(&::cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuStreamQuery) StreamQuery = nullptr;
  decltype(&::cuStreamGetFlags) StreamGetFlags = nullptr;
  decltype(&::cuStreamIsCapturing) StreamIsCapturing = nullptr;
  decltype(&::cuStreamBeginCapture) StreamBeginCapture = nullptr;
  decltype(&::cuStreamBeginCaptureToGraph) StreamBeginCaptureToGraph = nullptr;
  decltype(&::cuStreamEndCapture) StreamEndCapture = nullptr;
  decltype(&::cuThreadExchangeStreamCaptureMode) ThreadExchangeStreamCaptureMode = nullptr;
  decltype(&::cuGraphCreate) GraphCreate = nullptr;
  decltype(&::cuGraphDestroy) GraphDestroy = nullptr;
  decltype(&::cuStreamWaitEvent) StreamWaitEvent = nullptr;
  decltype(&::cuEventCreate) EventCreate = nullptr;
  decltype(&::cuEventRecord) EventRecord = nullptr;
  decltype(&::cuEventQuery) EventQuery = nullptr;
  decltype(&::cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cuEventDestroy) EventDestroy = nullptr;
  decltype(&::cuMemAddressReserve) MemAddressReserve = nullptr;
  decltype(&::cuMemAddressFree) MemAddressFree = nullptr;
  decltype(&::cuMemCreate) MemCreate = nullptr;
  decltype(&::cuMemRelease) MemRelease = nullptr;
  decltype(&::cuMemMap) MemMap = nullptr;
  decltype(&::cuMemUnmap) MemUnmap = nullptr;
  decltype(&::cuMemSetAccess) MemSetAccess = nullptr;
  decltype(&::cuMemGetAllocationGranularity) MemGetAllocationGranularity = nullptr;
  decltype(&::cuIpcGetMemHandle) IpcGetMemHandle = nullptr;
  decltype(&::cuMemAllocAsync) MemAllocAsync = nullptr;
  decltype(&::cuMemAllocFromPoolAsync) MemAllocFromPoolAsync = nullptr;
  decltype(&::cuMemFreeAsync) MemFreeAsync = nullptr;
  decltype(&::cuMemAllocManaged) MemAllocManaged = nullptr;
  decltype(&::cuMemAllocPitch) MemAllocPitch = nullptr;
  decltype(&::cuMemAllocHost) MemAllocHost = nullptr;
  decltype(&::cuMemFreeHost) MemFreeHost = nullptr;
  decltype(&::cuMemHostAlloc) MemHostAlloc = nullptr;

  // The fake's control API.
  decltype(&::fakecuda_alloc_calls) alloc_calls = nullptr;
  decltype(&::fakecuda_free_calls) free_calls = nullptr;
  decltype(&::fakecuda_calls) calls = nullptr;
  decltype(&::fakecuda_reset_counters) reset_counters = nullptr;
  decltype(&::fakecuda_bytes_in_use) bytes_in_use = nullptr;
  decltype(&::fakecuda_live_allocations) live_allocations = nullptr;
  decltype(&::fakecuda_is_live) is_live = nullptr;
  decltype(&::fakecuda_device_of) device_of = nullptr;
  decltype(&::fakecuda_device_count) device_count = nullptr;
  decltype(&::fakecuda_capacity) capacity = nullptr;
  decltype(&::fakecuda_set_capacity) set_capacity = nullptr;
  decltype(&::fakecuda_fail_next_alloc) fail_next_alloc = nullptr;
  decltype(&::fakecuda_hold_stream) hold_stream = nullptr;
  decltype(&::fakecuda_sync_count) sync_count = nullptr;
  decltype(&::fakecuda_reset_primary_unseen) reset_primary_unseen = nullptr;
  decltype(&::fakecuda_place_next_alloc) place_next_alloc = nullptr;

  // Names the programs used for the entry points with a per-thread-stream variant, so that
  // counters can be read under the name that was really called.
  std::string alloc_async_name = "cuMemAllocAsync";
  std::string alloc_from_pool_name = "cuMemAllocFromPoolAsync";
  std::string free_async_name = "cuMemFreeAsync";
};

// "shim": running under LD_PRELOAD=libcudapool.so; "fake": against the fake alone.
enum class Mode { kShim, kFake };

// Runs after cuInit with device 0's primary context current. Returns the exit status.
int run_scenario(const Driver& d, const std::string& scenario, Mode mode);

// Steps before cuInit that only the fake alone can be held to (lcuda_program and cudart_like).
void check_before_init(const Driver& d, Mode mode);

// Shared main tail: parses argv, runs cuInit + primary context, then the scenario.
int program_main(const Driver& d, int argc, char** argv, const char* program);

// What FC_CHECK and FC_EXPECT_RC call (scenario_helpers.cpp).
[[noreturn]] void fail(const char* file, int line, const std::string& what);
std::string result_name(const Driver& d, CUresult rc);

// --- helpers for the scenarios (scenario_helpers.cpp) --------------------------------------------

inline constexpr size_t kKiB = size_t{1} << 10;
inline constexpr size_t kMiB = size_t{1} << 20;

// One indented line on stdout, flushed.
void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// cuMemAlloc_v2 that must succeed with a non-null pointer.
CUdeviceptr alloc_ok(const Driver& d, size_t n);
// The fake's device pointers are host addresses.
void* host(CUdeviceptr p);
// Writes a tag at the start, middle and end of a block (all of it when small); stamped() checks it.
void stamp(CUdeviceptr p, size_t n, uint64_t tag);
bool stamped(CUdeviceptr p, size_t n, uint64_t tag);
uint64_t splitmix(uint64_t* state);
CUcontext current(const Driver& d);
// Waits until the fake counted the driver call `name` more than `before` times (a call is counted
// before a FAKECUDA_SLOW sleep, so it is then inside it); false after limit_ms.
bool calls_exceed(const Driver& d, const char* name, unsigned long long before, double limit_ms);
// A guard against a mis-registered test: CUDAPOOL_CONF holds every key:value of `with` (a
// comma-separated list) and none of `without` (empty: no check); else the scenario fails.
void require_conf(const char* with, const char* without = "");
// cuMemCreate's properties for pinned memory on device 0.
CUmemAllocationProp device0_pinned();

// --- scenarios in their own files (run_scenario in scenarios.cpp dispatches to them) -------------

// scenario_basics.cpp. cache_hit/disable: 1000 alloc/free pairs of 1 MiB, `pooled`: served by the
// pool from one driver allocation (else each pair reaches the driver).
int alloc_free_loop(const Driver& d, bool pooled);
// Bad sizes, no current context, bad frees, out of memory (FAKECUDA_DEVICE_MEMORY <= 256 MiB).
int errors(const Driver& d, Mode mode);
// cuMemGetInfo around an allocation; `fraction`: run with per_process_memory_fraction:0.5.
int meminfo(const Driver& d, Mode mode, bool fraction);
// cuMemGetAddressRange and pointer attributes of live, freed and unknown pointers.
int address_range(const Driver& d, Mode mode);

// scenario_threads.cpp. Threads allocating and freeing at once: data kept, blocks disjoint.
int threads(const Driver& d, Mode mode);
// A pool per device: blocks stay on their device (FAKECUDA_DEVICES >= 2).
int two_devices(const Driver& d, Mode mode);
// A forked child reaches the driver for every call; the parent's pool goes on.
int fork_scenario(const Driver& d, Mode mode);

// scenario_streams.cpp. streams_fence against the fake alone: held streams, events, sync counts.
int streams_fake(const Driver& d);
// streams_fence under the shim with reuse_fence:<fence> ("auto", "none" or "sync").
int streams_shim(const Driver& d, const std::string& fence);
// Allocations the shim does not pool (managed, pitched, stream-ordered, host, VMM) reach the
// driver.
int passthrough(const Driver& d);

// scenario_contexts.cpp. A primary context reset no hook sees: the answers are the driver's.
int hidden_reset(const Driver& d);
// A reset leaves nothing the shim cached allocated; `vmm`: run with expandable segments.
int reset_releases(const Driver& d, Mode mode, bool vmm);
// More contexts over the process's life than the shim has pool slots.
int many_contexts(const Driver& d, Mode mode);
// Threads making and destroying contexts while another walks the pools.
int contexts_threads(const Driver& d);
// cuIpcGetMemHandle of pooled blocks; `expandable`: run with expandable_segments:True.
int ipc(const Driver& d, Mode mode, bool expandable);

// scenario_fake_api.cpp: the fake's own contract, without the shim.
int fake_api(const Driver& d);

// scenario_thread_cache.cpp: the shim's per-thread caches of freed blocks. `conf` must appear in
// CUDAPOOL_CONF (a guard against a mis-registered test); `cached` says whether the caches are
// expected to be on (thread_cache:always without reporting) or off (never, or reporting on).
int thread_cache(const Driver& d, Mode mode, const char* conf, bool cached);
// thread_cache:auto: off for one thread, on once threads contend for the pool's lock.
int thread_cache_auto(const Driver& d, Mode mode);

// scenario_fences.cpp: reuse_fence:auto's shortcuts (idle non-blocking streams, work joined into
// the legacy stream, forks, a non-blocking stream ordered after the barrier before its work),
// checked by the blocks handed out and the driver calls the shim makes. `thread_cache`: run
// with thread_cache:always.
int fence_shortcuts(const Driver& d, Mode mode, bool thread_cache);

// scenario_oom.cpp: out-of-memory answers on a 64 MiB device (oom_explained.sh checks the
// explanation the shim prints and logs).
int oom_explained(const Driver& d, Mode mode);
// The allocations ("aN") and frees ("fI") of OOM_STEPS, each answer printed (oom_causes.sh).
int oom_steps(const Driver& d);

// scenario_context_cycles.cpp: 100,000 context lifetimes (created, reset seen and unseen, last
// released) with allocations, a second thread allocating meanwhile: resident memory stays flat.
int context_cycles(const Driver& d, Mode mode);

// scenario_faults.cpp: what fault_sweep.sh runs with one driver fault injected (FAKECUDA_FAIL);
// every check holds whatever call failed (FAKECUDA_DEVICE_MEMORY=256M).
int faults(const Driver& d, Mode mode);
// scenario_fault_cases.cpp: one check per shim defect the sweep found (under the shim; the cases
// of expandable_segments:True and reuse_fence:sync when CUDAPOOL_CONF names them).
int fault_cases(const Driver& d, Mode mode);

// scenario_idle_unmap.cpp, with FAKECUDA_SLOW=cuMemUnmap:MS: a slow cuMemUnmap holds no other
// call back (fake); the idle-release thread's unmap of pages the pool maps again at once (shim,
// expandable_segments:True with idle_release_ms).
int idle_unmap_wait(const Driver& d, Mode mode);
// scenario_idle_oom.cpp, with FAKECUDA_SLOW=cuMemFree_v2:MS and FAKECUDA_DEVICE_MEMORY=256M: a
// slow cuMemFree_v2 keeps its memory used (fake); an allocation that finds the device full while
// the idle-release thread gives a segment back waits for it (shim, idle_release_ms).
int idle_oom_wait(const Driver& d, Mode mode);

// scenario_idle_cache.cpp, with thread_cache:always and idle_release_ms: what a thread's cache
// keeps unused goes back to the pool, and its segment to the device.
int idle_thread_cache(const Driver& d, Mode mode);

// scenario_handles.cpp, with expandable_segments:True, expandable_handle_mb:100 and
// idle_release_ms: pages mapped in driver allocations of 5 pages, given back whole; a mapping that
// fails at its second handle takes nothing.
int expandable_handles(const Driver& d, Mode mode);

// scenario_capture.cpp: allocations and frees during stream captures get the driver's answer (the
// fake models the documented rule: capture.cpp), with the shim as without it (run also with
// expandable_segments:True and thread_cache:always).
int capture_rules(const Driver& d, Mode mode);

}  // namespace fakecuda_test

#define FC_CHECK(cond, ...)                                                           \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      char fc_msg_[512];                                                              \
      std::snprintf(fc_msg_, sizeof fc_msg_, __VA_ARGS__);                            \
      ::fakecuda_test::fail(__FILE__, __LINE__, std::string(#cond) + ": " + fc_msg_); \
    }                                                                                 \
  } while (0)

// Checks that a driver call returns `expected` (a CUresult).
#define FC_EXPECT_RC(d, call, expected)                                                   \
  do {                                                                                    \
    CUresult fc_rc_ = (call);                                                             \
    if (fc_rc_ != (expected)) {                                                           \
      ::fakecuda_test::fail(__FILE__, __LINE__,                                           \
                            std::string(#call) + " returned " +                           \
                                ::fakecuda_test::result_name(d, fc_rc_) + ", expected " + \
                                ::fakecuda_test::result_name(d, expected));               \
    }                                                                                     \
  } while (0)

#define FC_OK(d, call) FC_EXPECT_RC(d, call, CUDA_SUCCESS)
