// SPDX-License-Identifier: Apache-2.0
// shim/interpose/stream_work_hooks.cpp: one exported hook per driver entry point that puts work on
// a stream (the list is generated from cuda.h: stream_work_hooks.inc, by gen/stream_work.py). Each
// notes the stream (stream_work.h) and calls the real function with the same arguments. Reached
// through cuGetProcAddress/dlsym (hook_for) and, for programs linked with -lcuda, by symbol.
// cuLaunchGridAsync and other deprecated entry points are still hooked: old programs call them.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <array>
#include <atomic>
#include <mutex>
#include <type_traits>

#include "shim/driver/export.h"
#include "shim/interpose/hooks.h"
#include "shim/interpose/stream_work.h"
#include "shim/recording/event_log.h"
#include "shim/support/guard.h"
#include "shim/support/settings.h"

namespace cudapool::shim {
namespace {

template <class F>
F resolve(F& slot, const char* name) {
  if (slot == nullptr) slot = reinterpret_cast<F>(real_driver_function(name));
  return slot;
}

}  // namespace
}  // namespace cudapool::shim

#define CUDAPOOL_STREAM_OF_stream(arg) (arg)
#define CUDAPOOL_STREAM_OF_config(arg) ((arg) != nullptr ? (arg)->hStream : nullptr)
#define CUDAPOOL_STREAM_OF_implicit(arg) static_cast<CUstream>(nullptr)

// Each hook: the ordering a non-blocking stream may need, the real call, then the note.
#define CUDAPOOL_STREAM_WORK(symbol, per_thread, kind, arg, params, args)                      \
  namespace cudapool::shim {                                                                   \
  std::type_identity_t<CUresult(*) params> real_##symbol = nullptr;                            \
  }                                                                                            \
  CUDAPOOL_EXPORT CUresult symbol params {                                                     \
    const CUstream cudapool_stream_ = CUDAPOOL_STREAM_OF_##kind(arg);                          \
    const ::cudapool::shim::StreamRef cudapool_ref_ =                                          \
        ::cudapool::shim::stream_work_begins(cudapool_stream_, per_thread);                    \
    auto cudapool_real_ = ::cudapool::shim::resolve(::cudapool::shim::real_##symbol, #symbol); \
    const CUresult cudapool_result_ =                                                          \
        cudapool_real_ != nullptr ? cudapool_real_ args : CUDA_ERROR_NOT_INITIALIZED;          \
    ::cudapool::shim::stream_work_queued(cudapool_ref_, cudapool_stream_, #symbol);            \
    return cudapool_result_;                                                                   \
  }
#include "shim/interpose/stream_work_hooks.inc"
#undef CUDAPOOL_STREAM_WORK

namespace cudapool::shim {

void detail::log_first_work(const StreamRef& ref, CUstream stream, const char* entry_point) {
  std::atomic<bool>* flag = nullptr;
  switch (ref.kind) {
    case StreamKind::kNonBlocking:
    case StreamKind::kBlocking:
      flag = &ref.entry->first_work_logged;
      break;
    case StreamKind::kPerThread:
      flag = &g_per_thread_work_logged;
      stream = CU_STREAM_PER_THREAD;
      break;
    case StreamKind::kUnknown:
      flag = &g_unknown_work_logged;
      break;
    case StreamKind::kLegacy:
      return;
  }
  if (flag->exchange(true, std::memory_order_relaxed)) return;
  if (!reporting().log_template.empty()) {
    ReentrancyGuard guard;
    log_stream_event(log::LogAction::kStreamFirstWork, reinterpret_cast<std::uint64_t>(stream),
                     static_cast<std::uint64_t>(ref.kind), entry_point);
  }
}

namespace {

struct Pair {
  void* real;
  void* hook;
};

#define CUDAPOOL_STREAM_WORK(symbol, per_thread, kind, arg, params, args) +1
constexpr int kStreamWorkHooks = 0
#include "shim/interpose/stream_work_hooks.inc"
    ;
#undef CUDAPOOL_STREAM_WORK

std::array<Pair, kStreamWorkHooks> g_pairs{};
std::atomic<bool> g_built{false};
std::mutex g_build_mutex;

bool build() {
  if (g_built.load(std::memory_order_acquire)) return true;
  if (!load_real_driver()) return false;
  std::lock_guard<std::mutex> lock(g_build_mutex);
  if (g_built.load(std::memory_order_relaxed)) return true;
  int i = 0;
#define CUDAPOOL_STREAM_WORK(symbol, per_thread, kind, arg, params, args)       \
  g_pairs[i++] = Pair{reinterpret_cast<void*>(resolve(real_##symbol, #symbol)), \
                      reinterpret_cast<void*>(&::symbol)};
#include "shim/interpose/stream_work_hooks.inc"
#undef CUDAPOOL_STREAM_WORK
  g_built.store(true, std::memory_order_release);
  return true;
}

}  // namespace

void* stream_work_hook_for(void* real_function) {
  if (real_function == nullptr || !build()) return nullptr;
  for (const Pair& p : g_pairs) {
    if (p.real == real_function) return p.hook;
  }
  return nullptr;
}

}  // namespace cudapool::shim
