// SPDX-License-Identifier: Apache-2.0
// shim/pools/pool_reach.h: which context pools a thread may still be using, so that the registry
// (context_registry.cpp) makes a dropped pool's object over for a new context only once no other
// thread can reach it: hazard pointers. Each thread that looks pools up has a record of its own
// (taken on its first slow path, given back at its exit, never freed) naming the pools it may use:
// `at`, the pool its walk of the slots is looking at (and, once the walk found what it looked
// for, that pool, until its next walk); `kept`, pools a walk dropped and handed to its caller
// (drop_context_pools), until the thread's next slow path; `last`, its last pool (t_last_pool,
// what its hooks' fast path uses). Not here: the pools, the slots, when a pool is dropped or
// released (context_registry.h).
//
// How a thread reaches a pool object: (a) through t_last_pool, (b) during a walk of the slots
// (for_each_pool), (c) through the pool a walk found (current_pool, pool_holding) or dropped
// (drop_context_pools), (d) through its own thread caches (thread_cache.cpp: a cache compares its
// pool's generation, and touches a pool made over since only under that pool's lock, to find that
// it is not its own), (e) through a stream's entry, for the reuse fences' atomics only
// (stream_registry.h; ReuseFence::reuse_for keeps what those read valid). (a) to (c) are in the
// record. The protocol, with X dropping pool P, Y making P over for a new context, T any other:
//   T, walking: at = P (seq_cst store), then reads P's dropped flag (seq_cst) and skips P if set;
//     the pool found stays in `at`; last = it (release) before at moves on. A pool made for T
//     under the registry's lock becomes its last before T releases the lock.
//   T, fast path: uses t_last_pool, which `last` names; no store.
//   X, walking: at = P, dropped = true (seq_cst), kept = P (release) before at moves on;
//     release_dropped_pool sets memory_released at its end, under P's lock.
//   Y, under the registry's lock: reads dropped and memory_released (seq_cst), a seq_cst fence,
//     then every other thread's at, kept and last; makes P over (under P's lock, clearing
//     dropped last) only if none names P.
// If T found P live, its read of dropped precedes X's store in the total order of seq_cst
// operations, so T's store to `at` precedes Y's fence and Y reads at = P or a later value. A
// later value was stored (release) once T was done with P, or had made it its last or kept it,
// which Y then sees too. So either Y sees that T may use P, or T stopped using P (X's own walk
// likewise). A walk that reaches P after Y read the records finds P dropped, or (once Y cleared
// the flag with a release store) made over, with the new fields. A pool named by some thread's
// `last` is never made over: the fast path needs no store. Y's own record is not looked at: its
// hooks call current_pool before they hold any pool, and what it kept or found in earlier calls is
// no longer in use.
#pragma once

#include "shim/driver/cuda_api.h"

namespace cudapool::shim {

struct ContextPool;

// The calling thread's last pool: current_pool's fast path uses it while the current context
// keeps the id it had (or, without cuCtxGetId, the handle).
struct LastPool {
  CUcontext context = nullptr;
  unsigned long long id = 0;
  ContextPool* pool = nullptr;
};
inline thread_local LastPool t_last_pool;

// p, which the calling thread's walk found or made (so that it is covered without a gap), becomes
// its last pool and stays out of reuse until the next one. / No last pool.
void set_last_pool(CUcontext ctx, unsigned long long id, ContextPool* p);
void forget_last_pool();

// A walk of the slots (for_each_pool; slow paths only: a sequentially consistent store per pool
// looked at). at(p) before reading p's dropped flag; hold() when the walk found what it looked
// for: p then stays out of reuse until the thread's next walk. A walk's callback must not walk.
class PoolWalk {
 public:
  PoolWalk();
  ~PoolWalk();
  PoolWalk(const PoolWalk&) = delete;
  PoolWalk& operator=(const PoolWalk&) = delete;
  void at(ContextPool* p);
  void hold() { held_ = true; }

 private:
  bool held_ = false;
};

// The calling thread's slow path starts (current_pool): what it kept is no longer in use. / A pool
// a walk dropped, kept until then (a few; beyond them every pool is kept).
void forget_kept_pools();
void keep_pool(ContextPool* p);

// For the registry, under its creation lock, after it read p dropped and released with seq_cst
// loads: whether no thread but the caller may reach p (the protocol above).
bool out_of_other_threads_reach(const ContextPool& p);

}  // namespace cudapool::shim
