// SPDX-License-Identifier: Apache-2.0
// shim/pools/pool_slots.h: how many pool slots the process has taken so far, one per CUDA context
// pooled over its life (dropped ones included). The context registry takes the slots
// (context_registry.cpp); the reuse fences read the count (with more than one pool, another
// context's work may touch a block: reuse_fence.cpp). Only the count, so that neither needs the
// other's header.
#pragma once

#include <atomic>

namespace cudapool::shim {

namespace detail {
inline std::atomic<int> g_pool_slots_taken{0};
}  // namespace detail

// Slots taken so far: pool_slot(i) for i below it may be set (context_registry.h).
inline int pool_count() {
  return detail::g_pool_slots_taken.load(std::memory_order_acquire);
}

// Context registry only, under its lock: slot `slot` (the next one) is now taken.
inline void note_pool_slot_taken(int slot) {
  detail::g_pool_slots_taken.store(slot + 1, std::memory_order_release);
}

}  // namespace cudapool::shim
