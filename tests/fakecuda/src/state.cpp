// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/state.cpp: the fake driver's state, its lock (and a slow call's sleep without
// it), the per-thread context stack, stream resolution and the host-memory helpers behind device
// allocations. Not an entry point: the CUDA functions live in the other files of src/.
#include "state.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace fakecuda {
namespace {

size_t env_size(const char* name, size_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text) return fallback;
  switch (*end) {
    case 'k':
    case 'K':
      v <<= 10;
      break;
    case 'm':
    case 'M':
      v <<= 20;
      break;
    case 'g':
    case 'G':
      v <<= 30;
      break;
    default:
      break;
  }
  return static_cast<size_t>(v);
}

void init_mutex(pthread_mutex_t* mu) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(mu, &attr);
  pthread_mutexattr_destroy(&attr);
}

State* make_state() {
  auto* s = new State();
  init_mutex(&s->mu);
  s->pid.store(getpid());
  size_t devices = env_size("FAKECUDA_DEVICES", 2);
  if (devices < 1) devices = 1;
  if (devices > static_cast<size_t>(kMaxDevices)) devices = kMaxDevices;
  s->device_count = static_cast<int>(devices);
  size_t capacity = env_size("FAKECUDA_DEVICE_MEMORY", size_t{1} << 30);
  for (int d = 0; d < s->device_count; ++d) {
    Device& dev = s->devices[d];
    dev.capacity = capacity;
    dev.primary = new Context();
    dev.primary->device = d;
    dev.primary->primary = true;
    dev.primary->default_stream.ctx = dev.primary;
    dev.primary->default_stream.is_default = true;
    s->contexts.insert(dev.primary);
  }
  return s;
}

thread_local Context* tls_stack[kMaxContextDepth];
thread_local int tls_depth = 0;
thread_local int tls_lock_depth = 0;  // the Locks this thread holds (the mutex is recursive)

}  // namespace

State& S() {
  static State* state = make_state();
  return *state;
}

Lock::Lock() {
  State& s = S();
  pid_t now = getpid();
  if (s.pid.load() != now) {  // first call in a forked child: only this thread exists
    init_mutex(&s.mu);
    s.pid.store(now);
  }
  pthread_mutex_lock(&s.mu);
  ++tls_lock_depth;
}

Lock::~Lock() {
  --tls_lock_depth;
  pthread_mutex_unlock(&S().mu);
}

void slow_call(std::string_view name) {
  const unsigned ms = slow_call_ms(name);
  if (ms == 0) return;
  const bool unlock = tls_lock_depth == 1;
  if (unlock) pthread_mutex_unlock(&S().mu);
  timespec pause{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
  if (unlock) pthread_mutex_lock(&S().mu);
}

CUresult count_call(std::string_view name) {
  auto& calls = S().calls;
  auto it = calls.find(name);
  if (it == calls.end()) it = calls.emplace(std::string(name), 0).first;
  return injected_fault(name, ++it->second);
}

Context* current_context() {
  return tls_depth > 0 ? tls_stack[tls_depth - 1] : nullptr;
}

bool push_context(Context* ctx) {
  if (tls_depth >= kMaxContextDepth) return false;
  tls_stack[tls_depth++] = ctx;
  return true;
}

Context* pop_context() {
  return tls_depth > 0 ? tls_stack[--tls_depth] : nullptr;
}

void set_current_context(Context* ctx) {
  if (ctx == nullptr) {
    pop_context();
  } else if (tls_depth == 0) {
    push_context(ctx);
  } else {
    tls_stack[tls_depth - 1] = ctx;
  }
}

bool valid_context(Context* ctx) {
  return ctx != nullptr && S().contexts.count(ctx) != 0 && ctx->active;
}

bool valid_device(CUdevice dev) {
  return dev >= 0 && dev < S().device_count;
}

CUresult require_context(Context** ctx) {
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  Context* c = current_context();
  if (!valid_context(c)) return CUDA_ERROR_INVALID_CONTEXT;
  *ctx = c;
  return CUDA_SUCCESS;
}

Stream* resolve_stream(CUstream handle, CUresult* rc) {
  *rc = CUDA_SUCCESS;
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    Context* ctx = nullptr;
    *rc = require_context(&ctx);
    return *rc == CUDA_SUCCESS ? &ctx->default_stream : nullptr;
  }
  auto* s = reinterpret_cast<Stream*>(handle);
  if (S().streams.count(s) == 0) {
    *rc = CUDA_ERROR_INVALID_HANDLE;
    return nullptr;
  }
  return s;
}

void complete_pending(Stream* s) {
  for (Event* e : s->pending) {
    e->complete = true;
    e->stream = nullptr;
  }
  s->pending.clear();
}

void complete_through(Stream* s, Event* e) {
  size_t n = 0;
  while (n < s->pending.size()) {
    Event* p = s->pending[n++];
    p->complete = true;
    p->stream = nullptr;
    if (p == e) break;
  }
  s->pending.erase(s->pending.begin(), s->pending.begin() + static_cast<std::ptrdiff_t>(n));
}

void complete_context(Context* ctx) {
  complete_pending(&ctx->default_stream);
  for (Stream* s : S().streams) {
    if (s->ctx == ctx) complete_pending(s);
  }
}

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

void* map_aligned(size_t bytes, size_t alignment, int prot, int extra_flags) {
  size_t span = bytes + alignment;
  void* raw = mmap(nullptr, span, prot, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = round_up(start, alignment);
  if (aligned > start) munmap(raw, aligned - start);
  uintptr_t end = start + span;
  if (end > aligned + bytes)
    munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
  return reinterpret_cast<void*>(aligned);
}

Allocation* find_containing(uintptr_t p) {
  auto& allocations = S().allocations;
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return nullptr;
  --it;
  return p < it->first + it->second.size ? &it->second : nullptr;
}

Mapping* find_mapping(uintptr_t p) {
  auto& mappings = S().mappings;
  auto it = mappings.upper_bound(p);
  if (it == mappings.begin()) return nullptr;
  --it;
  return p < it->first + it->second.size ? &it->second : nullptr;
}

CUresult allocate(size_t size, Kind kind, Context* ctx, CUdeviceptr* out) {
  State& s = S();
  Device& dev = s.devices[ctx->device];
  bool charged = kind == Kind::kDevice || kind == Kind::kPitch || kind == Kind::kAsync;
  if (charged && (dev.used > dev.capacity || size > dev.capacity - dev.used)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  size_t alignment = kind == Kind::kHost ? kHostAlignment : kSmallAlignment;
  if (size >= kLargeAlignment) alignment = kLargeAlignment;
  Allocation a;
  a.host_bytes = round_up(size, alignment);
  void* p = nullptr;
  if (alignment == kLargeAlignment && s.place_next_alloc != 0) {
    // Where fakecuda_place_next_alloc asked: a real driver hands out freed addresses again.
    void* want = reinterpret_cast<void*>(s.place_next_alloc);
    s.place_next_alloc = 0;
    p = mmap(want, a.host_bytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    if (p != want) {  // a kernel without MAP_FIXED_NOREPLACE takes it as a hint
      munmap(p, a.host_bytes);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a.mmapped = true;
  } else if (alignment == kLargeAlignment) {
    p = map_aligned(a.host_bytes, alignment, PROT_READ | PROT_WRITE, MAP_NORESERVE);
    a.mmapped = true;
  } else {
    p = std::aligned_alloc(alignment, a.host_bytes);
  }
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = size;
  a.device = ctx->device;
  a.ctx = ctx;
  a.kind = kind;
  a.charged = charged;
  a.id = s.next_id++;
  if (charged) {
    dev.used += size;
    ++dev.live;
  }
  s.allocations.emplace(a.base, a);
  *out = static_cast<CUdeviceptr>(a.base);
  return CUDA_SUCCESS;
}

void release(std::map<uintptr_t, Allocation>::iterator it) {
  State& s = S();
  Allocation& a = it->second;
  if (a.charged) {
    Device& dev = s.devices[a.device];
    dev.used -= a.size;
    --dev.live;
  }
  if (a.mmapped) {
    munmap(reinterpret_cast<void*>(a.base), a.host_bytes);
  } else {
    std::free(reinterpret_cast<void*>(a.base));
  }
  s.allocations.erase(it);
}

void release_context_allocations(Context* ctx) {
  auto& allocations = S().allocations;
  for (auto it = allocations.begin(); it != allocations.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx) release(it);
    it = next;
  }
}

bool accessible_range(uintptr_t p, size_t n) {
  if (n == 0) return true;
  if (p + n < p) return false;
  if (Allocation* a = find_containing(p)) return p + n <= a->base + a->size;
  // A range may cross adjacent mappings (expandable segments map page by page).
  uintptr_t at = p;
  while (at < p + n) {
    Mapping* m = find_mapping(at);
    if (m == nullptr || (m->prot & PROT_WRITE) == 0) return false;
    at = m->base + m->size;
  }
  return true;
}

}  // namespace fakecuda
