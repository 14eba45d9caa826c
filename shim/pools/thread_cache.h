// SPDX-License-Identifier: Apache-2.0
// shim/pools/thread_cache.h: per-thread caches of freed blocks in front of a context pool, so that
// threads allocating at once do not all serialize on the pool's lock. A block a thread allocated
// and then freed stays with that thread (a few blocks, a few MiB) and comes back to its next
// allocation of the same rounded size without taking the pool's lock. To the pool such a block is
// still allocated; the block's holder word names the cache that tracks it, so a free from another
// thread, a double free, an out-of-memory retry and thread exit all find it.
//
// When caches are used (docs/shim.md, "Thread caches"): thread_cache:always, or thread_cache:auto
// once the pool's lock was contended in at least 1/8 of 1024 acquisitions; never while a log or
// summary is written (the log and replay then see every free). A freed block is kept only while
// it needs no reuse fence (reuse_fence:none, or auto while its pool is quiet: reuse_fence.h).
// Not here: the pool's policy (pool/), the hooks (hooks_memory.cpp), whether a pool's caches are
// on (ContextPool::thread_caching: set when the pool is made, context_registry.cpp, or by the
// contention count, pool_lock.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "shim/pools/context_registry.h"

namespace cudapool::shim {

class ThreadCache;

// A request the calling thread's cache missed, to be tracked once the pool served it.
struct CacheMiss {
  ThreadCache* cache = nullptr;  // nullptr: not to be tracked
  std::size_t rounded = 0;       // the request, rounded as the pool rounds it
};

// Allocation fast path: a cached block of the calling thread for `bytes`. Returns true with *ptr
// set when served; otherwise *miss says whether and how to track the block the pool hands out.
bool thread_cache_alloc(ContextPool& p, std::size_t bytes, std::uintptr_t* ptr, CacheMiss* miss);
// Under p's lock, for a miss with a cache: that cache tracks the block the pool just handed out.
void thread_cache_track(ContextPool& p, const CacheMiss& miss, std::uintptr_t ptr,
                        std::size_t block_size);

// Free fast path: true when ptr was a block the calling thread's cache tracks (it is now cached,
// or back in the pool); false for every other pointer.
bool thread_cache_free(ContextPool& p, std::uintptr_t ptr);

enum class HeldBlock : std::uint8_t { kNotHeld, kReleased, kAlreadyFree };
// Under p's lock, before the pool frees ptr: a block tracked by some thread's cache is released
// from it (kReleased); a block sitting freed in a cache is kAlreadyFree (a double free).
HeldBlock thread_cache_release_held(ContextPool& p, std::uintptr_t ptr);

// Under its pool's lock: whether allocated block b sits freed in a thread's cache (the program
// freed it; to the pool it is still allocated).
bool thread_cache_holds_freed(const pool::Block& b);

// Under p's lock: gives every cached block of every thread back to the pool; whether any was.
bool thread_cache_flush_all(ContextPool& p);
// Under p's lock, one tick of the idle-release clock (idle_release.cpp): a cache that keeps blocks
// and was not used (no hit, no kept free) for more than pool::kIdleTicks ticks gives them back to
// the pool, whose own idle clock then starts for them (so they go back to the device one
// idle_release_ms later).
void thread_cache_idle_tick(ContextPool& p);
// Under p's lock: bytes of freed blocks in p's thread caches.
std::size_t thread_cached_bytes(const ContextPool& p);

}  // namespace cudapool::shim
