// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/fakecuda_control.h: the test-only control and inspection API of the fake CUDA
// driver (build/tests/fakecuda/libcuda.so.1). C linkage, exported next to the driver symbols:
// programs linked with -lcuda call these directly; programs that dlopen the driver as cudart does
// reach them with dlsym(handle, "fakecuda_...") (decltype(&fakecuda_calls) names the type). Not
// part of any real driver. All functions are thread-safe and usable before cuInit.
//
// Environment read at the first driver call: FAKECUDA_DEVICES (default 2, at most 16) and
// FAKECUDA_DEVICE_MEMORY (bytes per device, default 1 GiB; a K/M/G suffix is accepted). Fault
// injection and the exit report (src/faults.cpp says it whole):
//   FAKECUDA_FAIL="name:N[:ERROR],..."  call number N of entry point `name` (counted as
//     fakecuda_calls counts) fails with ERROR (a CUDA_ERROR_* name or number; default: one that
//     entry point plausibly answers: out of memory for allocations and creations, not ready for
//     queries, launch failed for calls that queue or wait for work, invalid handle for destroys,
//     invalid value otherwise), doing nothing (a synchronize fails after its wait); once.
//   FAKECUDA_FAIL_FROM_RESET=1  no fault fires before the first fakecuda_reset_counters().
//   FAKECUDA_SLOW="name:MS,..."  every call of entry point `name` sleeps MS milliseconds once
//     counted, before its work, without the driver's lock (other threads' calls go on, and see
//     the state from before it: a slow cuMemUnmap's pages still mapped).
//   FAKECUDA_COUNT_CALLS=path  at exit: the call counts per entry point, the faults (fired or
//     not) and what is still allocated, one "calls|fault|outstanding ..." line each.
#pragma once

#include <cuda.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Calls of cuMemAlloc_v2 / cuMemFree_v2 that reached the fake (failed ones included).
unsigned long long fakecuda_alloc_calls(void);
unsigned long long fakecuda_free_calls(void);
// Calls of any exported entry point, by its exported name ("cuMemAllocAsync" and
// "cuMemAllocAsync_ptsz" count apart). 0 for names never called.
unsigned long long fakecuda_calls(const char* name);
// Clears every call counter and the sync count; allocations, capacities and holds stay. Faults of
// FAKECUDA_FAIL then count from here (and are armed, with FAKECUDA_FAIL_FROM_RESET=1).
void fakecuda_reset_counters(void);
// Faults injected so far (FAKECUDA_FAIL, fakecuda_fail_call), and the error of the last one
// (CUDA_SUCCESS before any).
unsigned long long fakecuda_faults_fired(void);
CUresult fakecuda_last_fault(void);
// The nth call from now (1: the next) of entry point `name` fails with `error` (CUDA_SUCCESS:
// the entry point's default error), doing nothing; once. 0, or -1 for a null name or nth 0.
int fakecuda_fail_call(const char* name, unsigned long long nth, CUresult error);

// Bytes charged on a device (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocAsync as requested, and
// cuMemCreate); dev -1 sums all devices.
size_t fakecuda_bytes_in_use(int dev);
// Live cuMemAlloc_v2 / cuMemAllocPitch_v2 / cuMemAllocAsync allocations; dev -1 sums all devices.
size_t fakecuda_live_allocations(int dev);
// 1 when p lies inside a live allocation of any kind (device, pitch, async, managed, pinned host;
// base or interior) or an accessible VMM mapping.
int fakecuda_is_live(CUdeviceptr p);
// The device of the allocation containing p, or -1.
int fakecuda_device_of(CUdeviceptr p);

int fakecuda_device_count(void);
size_t fakecuda_capacity(int dev);
// Sets a device's capacity (cuMemGetInfo_v2 total, cuDeviceTotalMem_v2); 0 on success, -1 for a
// bad device. Existing allocations stay even above the new capacity.
int fakecuda_set_capacity(int dev, size_t bytes);
// The next n calls of cuMemAlloc_v2 that pass argument and context checks fail with
// CUDA_ERROR_OUT_OF_MEMORY.
void fakecuda_fail_next_alloc(int n);
// The next allocation of 2 MiB or more, of any kind, is placed at
// address `at`, as a real driver places new memory at freed addresses; it fails with
// CUDA_ERROR_OUT_OF_MEMORY if anything is mapped there. 0, or -1 when `at` is not 2 MiB aligned.
int fakecuda_place_next_alloc(CUdeviceptr at);

// Holds (hold != 0) or releases a stream: events recorded on a held stream stay incomplete
// (cuEventQuery and cuStreamQuery answer CUDA_ERROR_NOT_READY) until cuEventSynchronize,
// cuStreamSynchronize or cuCtxSynchronize completes them, or the hold is released (which completes
// them). The stream stays held after a synchronize. 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
// name the calling thread's current context's default stream. Returns 0, or -1 for an unknown
// stream.
int fakecuda_hold_stream(CUstream s, int hold);
// Resets device dev's primary context as cudart's cudaDeviceReset does, through no exported entry
// point (a shim sees no call): its allocations are gone and its cuCtxGetId changes. 0, or -1 for
// a bad device or before cuInit.
int fakecuda_reset_primary_unseen(int dev);
// Calls of cuCtxSynchronize, cuStreamSynchronize(_ptsz) and cuEventSynchronize that waited
// (succeeded, or reported an injected fault after their wait).
unsigned long long fakecuda_sync_count(void);

#ifdef __cplusplus
}  // extern "C"
#endif
