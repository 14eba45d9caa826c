// SPDX-License-Identifier: Apache-2.0
// shim/interpose/proc_address.cpp: the lookups through which programs find driver functions:
// cuGetProcAddress_v2 (5 arguments, what cudart uses), the legacy 4-argument cuGetProcAddress, and
// the handle-scoped part of dlsym (dlsym_hook.cpp has the entry point). Each calls the real lookup
// with the caller's arguments and swaps the answer for a hook only when it is a hooked function.
#include <cstring>

#include "shim/driver/export.h"
#include "shim/interpose/hooks.h"
#include "shim/support/diagnostics.h"
#include "shim/support/mode.h"
#include "shim/support/settings.h"

using namespace cudapool::shim;

namespace {

// Whether answers may be swapped: pooling, or at least not disabled (before the first CUDA call
// cudart asks for everything; the hooks themselves decide later whether to pool).
bool may_substitute() {
  return !inside_shim() && mode() == Mode::kPooling;
}

// CUDAPOOL_LOG_LEVEL=debug (or the older CUDAPOOL_TRACE_LOOKUPS=1): which lookups the program makes
// and what it gets (a framework whose allocations do not reach the pool shows here how it finds the
// driver).
void trace_lookup(const char* via, const char* symbol, int version, cuuint64_t flags, void* found,
                  void* answer) {
  if (mode() != Mode::kPooling) return;
  const Level level = reporting().trace_lookups ? Level::kWarn : Level::kDebug;
  if (!shown(level)) return;
  say(level, "lookup %s(%s, version %d, flags 0x%llx) -> %s", via,
      symbol != nullptr ? symbol : "(null)", version, static_cast<unsigned long long>(flags),
      found == nullptr  ? "not found"
      : answer != found ? "hook"
                        : "driver's own");
}

}  // namespace

CUDAPOOL_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                             cuuint64_t flags,
                                             CUdriverProcAddressQueryResult* status) {
  if (!load_real_driver() || real().cuGetProcAddress_v2 == nullptr) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  const CUresult r = real().cuGetProcAddress_v2(symbol, pfn, version, flags, status);
  void* found = r == CUDA_SUCCESS && pfn != nullptr ? *pfn : nullptr;
  if (found != nullptr && may_substitute()) *pfn = hook_for(found);
  trace_lookup("cuGetProcAddress_v2", symbol, version, flags, found, found ? *pfn : nullptr);
  return r;
}

CUDAPOOL_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version,
                                          cuuint64_t flags) {
  if (!load_real_driver() || real().cuGetProcAddress == nullptr) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  const CUresult r = real().cuGetProcAddress(symbol, pfn, version, flags);
  void* found = r == CUDA_SUCCESS && pfn != nullptr ? *pfn : nullptr;
  if (found != nullptr && may_substitute()) *pfn = hook_for(found);
  trace_lookup("cuGetProcAddress", symbol, version, flags, found, found ? *pfn : nullptr);
  return r;
}

// dlsym(handle, name) for a real handle (not RTLD_DEFAULT/RTLD_NEXT), called by the dlsym entry
// point. Only names starting with "cu" can be driver functions; the pointer decides.
extern "C" __attribute__((visibility("hidden"), used)) void* cudapool_dlsym_handle(
    void* handle, const char* name) {
  void* found = real_dlsym(handle, name);
  if (name == nullptr || name[0] != 'c' || name[1] != 'u') return found;
  void* answer = found;
  if (found != nullptr && may_substitute()) {
    ReentrancyGuard guard;
    answer = hook_for(found);
  }
  trace_lookup("dlsym", name, 0, 0, found, answer);
  return answer;
}
