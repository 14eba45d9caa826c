// SPDX-License-Identifier: Apache-2.0
// shim/support/mode.h: the shim's mode (pooling, or every call passed straight through), read by
// every hook and by a thread's exit (pools/thread_cache.cpp): here, below the pools; the flag is
// defined in mode.cpp. The lifecycle sets it (lifecycle/startup.cpp defines initialize_mode(): the
// one call from a lower room up to a higher one, at link level only): on the first hooked call
// (the settings read once, their diagnostics printed once, the at-exit report armed), by
// CUDAPOOL_DISABLE, and in a child after fork (which never pools). Not here: the settings
// (settings.h), the pools (pools/context_registry.h), the exit report (reports/exit_report.h).
#pragma once

#include <atomic>

namespace cudapool::shim {

enum class Mode : int { kUninitialized = 0, kPooling = 1, kPassThrough = 2 };

namespace detail {
extern std::atomic<int> g_mode;
Mode initialize_mode();  // lifecycle/startup.cpp
}  // namespace detail

// Initializes on first use; afterwards one acquire load, inlined (a plain load on x86-64): a
// thread that sees the mode another thread's initialize() stored also sees the settings it read
// (a relaxed load did not promise that: ThreadSanitizer saw cuMemAlloc_v2 read reporting() while
// another thread's first call was still writing it, 2026-12-04). kPassThrough when
// CUDAPOOL_DISABLE=1 or in a child after fork. Reads no CUDA state.
inline Mode mode() {
  const int m = detail::g_mode.load(std::memory_order_acquire);
  if (m != static_cast<int>(Mode::kUninitialized)) [[likely]]
    return static_cast<Mode>(m);
  return detail::initialize_mode();
}

}  // namespace cudapool::shim
