// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/state.h: the fake driver's state (devices, contexts, allocations, streams,
// events, virtual-memory objects, call counters) and the helpers every entry point uses. One
// recursive mutex guards all of it. Not a simulator: no kernels, no queues, no device memory, only
// host memory behind the addresses it hands out.
#pragma once

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "the fake is built with legacy-stream names; its _ptsz/_ptds symbols are defined explicitly"
#endif

#include <cuda.h>
#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fakecuda {

constexpr size_t kSmallAlignment = 512;
constexpr size_t kLargeAlignment = size_t{2} << 20;  // and the VMM granularity
constexpr size_t kHostAlignment = 4096;
constexpr int kMaxDevices = 16;
constexpr int kMaxContextDepth = 64;

enum class Kind { kDevice, kPitch, kAsync, kManaged, kHost };

struct Context;
struct Event;

struct Stream {
  Context* ctx = nullptr;
  unsigned flags = 0;
  int priority = 0;
  bool is_default = false;
  bool held = false;
  std::vector<Event*> pending;  // incomplete events recorded on this stream, in record order
  // Stream capture (capture.cpp): its status, the mode it was begun in and the thread that began
  // it.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  pid_t capture_thread = 0;
};

struct Event {
  unsigned flags = 0;
  Stream* stream = nullptr;  // the stream it is pending on, or null
  bool complete = true;
};

struct Context {
  int device = 0;
  bool primary = false;
  bool active = false;  // a primary context is active while retained; a created one until destroyed
  int refcount = 0;     // primary contexts only
  unsigned flags = 0;
  unsigned long long id = 0;  // cuCtxGetId: new for every creation or reactivation
  Stream default_stream;      // what CUstream 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name
};

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;        // as requested; what address ranges and attributes report
  size_t host_bytes = 0;  // what backs it
  bool mmapped = false;   // mmap (munmap to free) or aligned_alloc (free)
  int device = 0;
  Context* ctx = nullptr;
  Kind kind = Kind::kDevice;
  bool charged = false;  // counted in the device's used bytes
  unsigned long long id = 0;
};

struct PhysicalHandle {  // cuMemCreate
  int fd = -1;
  size_t size = 0;
  int device = 0;
  int mappings = 0;
  bool released = false;
  unsigned long long id = 0;
};

struct Mapping {  // cuMemMap
  uintptr_t base = 0;
  size_t size = 0;
  size_t offset = 0;
  CUmemGenericAllocationHandle handle = 0;
  int device = 0;
  int prot = 0;  // PROT_NONE until cuMemSetAccess
};

struct Device {
  size_t capacity = 0;
  size_t used = 0;  // bytes charged: device, pitch and async allocations, cuMemCreate
  size_t live = 0;  // live device, pitch and async allocations
  Context* primary = nullptr;
  unsigned primary_flags = 0;
};

struct State {
  pthread_mutex_t mu;
  std::atomic<pid_t> pid{0};
  bool initialized = false;
  int device_count = 2;
  Device devices[kMaxDevices];
  std::map<uintptr_t, Allocation> allocations;
  std::map<uintptr_t, size_t> reservations;  // cuMemAddressReserve
  std::map<CUmemGenericAllocationHandle, PhysicalHandle> handles;
  std::map<uintptr_t, Mapping> mappings;
  std::set<Context*> contexts;  // live contexts (primary ones always)
  std::set<Stream*> streams;    // live created streams
  std::set<Event*> events;
  std::map<std::string, unsigned long long, std::less<>> calls;
  unsigned long long sync_count = 0;
  int fail_next_alloc = 0;
  uintptr_t place_next_alloc = 0;  // fakecuda_place_next_alloc; 0: anywhere
  unsigned long long next_id = 1;
};

// The one state, created on first use and never destroyed (programs call the driver from atexit
// handlers and static destructors).
State& S();

// Takes the mutex. In a forked child (pid changed) the mutex is re-created first, so that a fork
// while another thread held it cannot deadlock the child.
class Lock {
 public:
  Lock();
  ~Lock();
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;
};

// Counts one call of an exported entry point (lock held); returns the error a fault injected into
// this call (faults.cpp: FAKECUDA_FAIL, fakecuda_fail_call), else CUDA_SUCCESS.
CUresult count_call(std::string_view name);
// A call FAKECUDA_SLOW names (faults.cpp) sleeps here, after its count and before its work, with
// the lock released (when this thread holds it once, as an entry point does): other threads' calls
// go on meanwhile and see the state as it was before the call.
void slow_call(std::string_view name);

// Every entry point starts with this: lock, count, fail at once (no effect) when a fault names this
// call, else sleep first when FAKECUDA_SLOW names it.
#define FAKECUDA_ENTRY(name)                                                                \
  ::fakecuda::Lock fc_lock_;                                                                \
  if (const CUresult fc_fault_ = ::fakecuda::count_call(name); fc_fault_) return fc_fault_; \
  ::fakecuda::slow_call(name)

// The synchronizing entry points (cuCtxSynchronize, cuStreamSynchronize(_ptsz),
// cuEventSynchronize) start with this instead: an injected fault is reported after the wait, as a
// driver reports a failure of the work waited for (which is then over); they end with
// `return FAKECUDA_WAITED(result)`.
#define FAKECUDA_WAIT_ENTRY(name)                          \
  ::fakecuda::Lock fc_lock_;                               \
  const CUresult fc_fault_ = ::fakecuda::count_call(name); \
  ::fakecuda::slow_call(name)
#define FAKECUDA_WAITED(result) (fc_fault_ != CUDA_SUCCESS ? fc_fault_ : (result))

// Fault injection (faults.cpp, lock held): the error to fail call number `count` of `name` with,
// or CUDA_SUCCESS; and the note that the counters were reset (fakecuda_reset_counters).
CUresult injected_fault(std::string_view name, unsigned long long count);
void faults_counters_reset();
// The milliseconds FAKECUDA_SLOW makes `name` sleep, or 0 (faults.cpp, lock held).
unsigned slow_call_ms(std::string_view name);
// Error names (context.cpp): CUDA_ERROR_* to its code and back; false / nullptr if unknown.
bool error_from_name(std::string_view name, CUresult* code);
const char* error_name(CUresult code);

// The calling thread's context stack.
Context* current_context();
bool push_context(Context* ctx);
Context* pop_context();
void set_current_context(Context* ctx);
unsigned long long next_context_id();  // replaces the top; null pops

// CUDA_SUCCESS with *ctx the current active context, or the error the driver gives.
CUresult require_context(Context** ctx);
bool valid_context(Context* ctx);  // live and active
bool valid_device(CUdevice dev);

// Streams: 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the current context's default stream.
Stream* resolve_stream(CUstream handle, CUresult* rc);
void complete_pending(Stream* s);            // every pending event of s
void complete_through(Stream* s, Event* e);  // pending events of s up to and including e
void complete_context(Context* ctx);         // every stream of ctx
// The rule of stream capture for a potentially unsafe call (capture.cpp): CUDA_SUCCESS, or
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED with the captures that forbid the call invalidated.
CUresult capture_allows_unsafe_call();

// Memory.
Allocation* find_containing(uintptr_t p);  // an allocation of any kind containing p
Mapping* find_mapping(uintptr_t p);        // a VMM mapping containing p
void* map_aligned(size_t bytes, size_t alignment, int prot, int extra_flags);  // null on failure
CUresult allocate(size_t size, Kind kind, Context* ctx, CUdeviceptr* out);
void release(std::map<uintptr_t, Allocation>::iterator it);  // frees the host memory, uncharges
void release_context_allocations(Context* ctx);
// True when [p, p+n) lies inside one allocation or one accessible mapping.
bool accessible_range(uintptr_t p, size_t n);

size_t round_up(size_t n, size_t to);

}  // namespace fakecuda
