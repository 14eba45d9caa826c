// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/control.cpp: the fakecuda_* control and inspection functions declared in
// tests/fakecuda/fakecuda_control.h. They are not counted as calls and need no cuInit.
#include "fakecuda_control.h"

#include "state.h"

using namespace fakecuda;

namespace {

unsigned long long calls_of(std::string_view name) {
  auto& calls = S().calls;
  auto it = calls.find(name);
  return it == calls.end() ? 0 : it->second;
}

}  // namespace

extern "C" {

unsigned long long fakecuda_alloc_calls(void) {
  Lock lock;
  return calls_of("cuMemAlloc_v2");
}

unsigned long long fakecuda_free_calls(void) {
  Lock lock;
  return calls_of("cuMemFree_v2");
}

unsigned long long fakecuda_calls(const char* name) {
  if (name == nullptr) return 0;
  Lock lock;
  return calls_of(name);
}

void fakecuda_reset_counters(void) {
  Lock lock;
  S().calls.clear();
  S().sync_count = 0;
  faults_counters_reset();
}

size_t fakecuda_bytes_in_use(int dev) {
  Lock lock;
  size_t total = 0;
  for (int d = 0; d < S().device_count; ++d) {
    if (dev < 0 || d == dev) total += S().devices[d].used;
  }
  return total;
}

size_t fakecuda_live_allocations(int dev) {
  Lock lock;
  size_t total = 0;
  for (int d = 0; d < S().device_count; ++d) {
    if (dev < 0 || d == dev) total += S().devices[d].live;
  }
  return total;
}

int fakecuda_is_live(CUdeviceptr p) {
  Lock lock;
  if (find_containing(p) != nullptr) return 1;
  Mapping* m = find_mapping(p);
  return m != nullptr && m->prot != 0 ? 1 : 0;
}

int fakecuda_device_of(CUdeviceptr p) {
  Lock lock;
  if (Allocation* a = find_containing(p)) return a->device;
  if (Mapping* m = find_mapping(p)) return m->device;
  return -1;
}

int fakecuda_device_count(void) {
  Lock lock;
  return S().device_count;
}

size_t fakecuda_capacity(int dev) {
  Lock lock;
  return valid_device(dev) ? S().devices[dev].capacity : 0;
}

int fakecuda_set_capacity(int dev, size_t bytes) {
  Lock lock;
  if (!valid_device(dev)) return -1;
  S().devices[dev].capacity = bytes;
  return 0;
}

void fakecuda_fail_next_alloc(int n) {
  Lock lock;
  S().fail_next_alloc = n < 0 ? 0 : n;
}

int fakecuda_place_next_alloc(CUdeviceptr at) {
  Lock lock;
  if (at == 0 || at % kLargeAlignment != 0) return -1;
  S().place_next_alloc = static_cast<uintptr_t>(at);
  return 0;
}

int fakecuda_hold_stream(CUstream s, int hold) {
  Lock lock;
  Stream* stream = nullptr;
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    Context* ctx = current_context();
    if (ctx == nullptr || S().contexts.count(ctx) == 0) return -1;
    stream = &ctx->default_stream;
  } else {
    stream = reinterpret_cast<Stream*>(s);
    if (S().streams.count(stream) == 0) return -1;
  }
  stream->held = hold != 0;
  if (!stream->held) complete_pending(stream);
  return 0;
}

unsigned long long fakecuda_sync_count(void) {
  Lock lock;
  return S().sync_count;
}

}  // extern "C"
