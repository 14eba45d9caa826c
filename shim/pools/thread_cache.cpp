// SPDX-License-Identifier: Apache-2.0
// shim/pools/thread_cache.cpp: see thread_cache.h. Lock order: a pool's lock, then a thread cache's
// lock; the fast paths take only the calling thread's cache lock (uncontended unless another
// thread is freeing one of this thread's blocks or flushing), never the pool's while holding it.
#include "shim/pools/thread_cache.h"

#include <algorithm>
#include <mutex>

#include <unistd.h>

#include "pool/rounding.h"
#include "shim/pools/pool_lock.h"
#include "shim/support/guard.h"
#include "shim/support/mode.h"

namespace cudapool::shim {

namespace {

// Bounds of one thread's cache for one pool: what another thread may miss of the pool's memory
// at most, per thread, until an out-of-memory retry or the thread's exit hands it back.
constexpr int kLiveSlots = 32;  // allocated blocks tracked (more are left to the pool alone)
constexpr int kIdleSlots = 8;   // freed blocks kept
constexpr std::size_t kIdleBytes = std::size_t{32} << 20;
constexpr std::size_t kLargestCachedBlock = std::size_t{8} << 20;

struct Entry {
  std::uintptr_t ptr = 0;
  std::size_t rounded = 0;  // the rounded request the block was handed out for
  std::size_t size = 0;     // the block's size
};

// A short list, newest last.
template <int N>
struct EntryList {
  Entry items[N];
  int count = 0;

  bool full() const { return count == N; }
  void push(const Entry& e) { items[count++] = e; }
  Entry remove_at(int i) {
    const Entry e = items[i];
    std::copy(items + i + 1, items + count, items + i);
    --count;
    return e;
  }
  int find_ptr(std::uintptr_t ptr) const {
    for (int i = count - 1; i >= 0; --i) {
      if (items[i].ptr == ptr) return i;
    }
    return -1;
  }
  int find_rounded(std::size_t rounded) const {
    for (int i = count - 1; i >= 0; --i) {
      if (items[i].rounded == rounded) return i;
    }
    return -1;
  }
};

}  // namespace

class ThreadCache {
 public:
  explicit ThreadCache(ContextPool& p)
      : pool(p), generation(p.generation.load(std::memory_order_relaxed)) {}
  ContextPool& pool;
  // The pool's generation when this cache was made: once the object is made over for a new
  // context the cache is stale, and nothing but its owner names it any more (the pool's list
  // was emptied and every block of it forgotten, under the pool's lock).
  const std::uint64_t generation;
  SpinLock lock;
  EntryList<kLiveSlots> live;  // handed out, tracked (holder = this)
  EntryList<kIdleSlots> idle;  // freed by the program, kept (holder = this)
  std::atomic<std::size_t> idle_bytes{0};
  // live.count, readable without the lock: only the owner adds live entries, so when the owner
  // reads 0 it has none (others only remove), and its free skips the lock.
  std::atomic<int> live_count{0};
  // Hits and kept frees, counted under the lock; what the idle-release thread saw of it at its
  // last tick, and for how many ticks since it has not moved (under the pool's lock and this one).
  std::uint64_t uses = 0;
  std::uint64_t uses_seen = 0;
  std::uint32_t quiet_ticks = 0;

  void push_live(const Entry& e) {
    live.push(e);
    live_count.store(live.count, std::memory_order_relaxed);
  }
  Entry remove_live(int i) {
    const Entry e = live.remove_at(i);
    live_count.store(live.count, std::memory_order_relaxed);
    return e;
  }

  // Keeps e; the entries pushed out to make room go to *out.
  template <int N>
  void keep(const Entry& e, EntryList<N>* out) {
    static_assert(N >= kIdleSlots, "room for every evicted entry");
    std::size_t bytes = idle_bytes.load(std::memory_order_relaxed);
    while (idle.count > 0 && (idle.full() || bytes + e.size > kIdleBytes)) {
      const Entry old = idle.remove_at(0);
      bytes -= old.size;
      out->push(old);
    }
    idle.push(e);
    idle_bytes.store(bytes + e.size, std::memory_order_relaxed);
  }
  // Every kept entry, out of the cache.
  EntryList<kIdleSlots> take_all_idle() {
    const EntryList<kIdleSlots> all = idle;
    idle.count = 0;
    idle_bytes.store(0, std::memory_order_relaxed);
    return all;
  }
  Entry take_idle(int i) {
    const Entry e = idle.remove_at(i);
    idle_bytes.store(idle_bytes.load(std::memory_order_relaxed) - e.size,
                     std::memory_order_relaxed);
    return e;
  }
};

namespace {

std::uintptr_t holder_word(ThreadCache* c) {
  return reinterpret_cast<std::uintptr_t>(c);
}

// Under p's lock: blocks back to the pool, as frees.
template <int N>
void give_back(ContextPool& p, const EntryList<N>& blocks) {
  for (int i = 0; i < blocks.count; ++i) {
    p.pool.set_holder(blocks.items[i].ptr, 0);
    p.pool.free(blocks.items[i].ptr);
  }
}

// Under p's lock: what c keeps goes back to the pool; whether anything did.
bool return_kept(ContextPool& p, ThreadCache& c) {
  EntryList<kIdleSlots> kept;
  {
    std::lock_guard<SpinLock> lock(c.lock);
    kept = c.take_all_idle();
  }
  give_back(p, kept);
  return kept.count > 0;
}

// The pool's lock for a thread that is exiting, or nothing after about 0.1 s: exit() called from a
// signal handler may find the lock held by a thread that will never run again.
bool lock_for_exit(ContextPool& p) {
  for (int attempt = 0; attempt < 10000; ++attempt) {
    if (p.mutex.try_lock()) return true;
    if (attempt < 100) {
      __builtin_ia32_pause();
    } else {
      usleep(10);
    }
  }
  return false;
}

// Under p's lock, c being a cache of p's present context: c is out of p's list, and no block of p
// names it any more. A live pool gets c's kept blocks back; a dropped pool's blocks went with its
// context (they are only unmarked).
void detach(ContextPool& p, ThreadCache& c) {
  auto& list = p.thread_caches;
  list.erase(std::remove(list.begin(), list.end(), &c), list.end());
  std::lock_guard<SpinLock> cache_lock(c.lock);
  for (int i = 0; i < c.live.count; ++i) p.pool.set_holder(c.live.items[i].ptr, 0);
  if (!p.dropped.load(std::memory_order_acquire)) {
    give_back(p, c.idle);
    return;
  }
  for (int i = 0; i < c.idle.count; ++i) p.pool.set_holder(c.idle.items[i].ptr, 0);
}

// Whether c belongs to its pool's present context (under the pool's lock; without it, a hint).
bool current_generation(const ThreadCache& c) {
  return c.generation == c.pool.generation.load(std::memory_order_acquire);
}

// Hands everything c holds back to its pool and forgets c (thread exit). After a fork no pool may
// be touched (another thread may have held its lock); a thread interrupted inside the shim (a
// signal handler calling exit) may hold the lock itself: in these cases, and when the lock stays
// busy, the cache is left as it is. A cache of a pool made over since is merely deleted.
void retire(ThreadCache* c) {
  ContextPool& p = c->pool;
  if (mode() != Mode::kPooling || inside_shim() || !lock_for_exit(p)) return;
  {
    std::lock_guard<SpinLock> pool_lock(p.mutex, std::adopt_lock);
    if (current_generation(*c)) detach(p, *c);
  }
  delete c;
}

// The calling thread's caches, one per pool it used; handed back when the thread exits.
struct ThreadCaches {
  static constexpr int kMax = 8;
  ThreadCache* caches[kMax] = {};
  int count = 0;
  ~ThreadCaches();
};

thread_local ThreadCache* t_last_cache = nullptr;  // the calling thread's cache of its last pool
// Set once the thread's caches were handed back at its exit: a CUDA call from a later thread-exit
// destructor must not bring back a cache that nothing would hand back again.
thread_local bool t_caches_retired = false;

ThreadCaches& thread_caches() {
  static thread_local ThreadCaches caches;
  return caches;
}

ThreadCaches::~ThreadCaches() {
  t_caches_retired = true;
  t_last_cache = nullptr;
  for (int i = 0; i < count; ++i) retire(caches[i]);
  count = 0;
}

// Makes room in a thread's full list for a new pool's cache (a process that goes through many
// contexts): one cache of a dropped pool (its blocks went with the context), or of a pool made
// over for another context since, is forgotten.
bool forget_dropped_cache(ThreadCaches& mine) {
  for (int i = 0; i < mine.count; ++i) {
    ThreadCache* c = mine.caches[i];
    ContextPool& p = c->pool;
    if (current_generation(*c) && !p.dropped.load(std::memory_order_acquire)) continue;
    {
      std::lock_guard<SpinLock> lock(p.mutex);
      if (current_generation(*c)) detach(p, *c);  // dropped: it stays dropped until made over
    }
    mine.caches[i] = mine.caches[--mine.count];
    if (t_last_cache == c) t_last_cache = nullptr;
    delete c;
    return true;
  }
  return false;
}

// The calling thread's cache for p (its present context: p is the thread's last pool, so it is
// not made over meanwhile); made (and registered with p) when `make`.
ThreadCache* cache_for(ContextPool& p, bool make) {
  const std::uint64_t generation = p.generation.load(std::memory_order_relaxed);
  if (t_last_cache != nullptr && &t_last_cache->pool == &p &&
      t_last_cache->generation == generation) {
    return t_last_cache;
  }
  if (t_caches_retired) return nullptr;
  ThreadCaches& mine = thread_caches();
  for (int i = 0; i < mine.count; ++i) {
    ThreadCache* c = mine.caches[i];
    if (&c->pool == &p && c->generation == generation) return t_last_cache = c;
  }
  if (!make) return nullptr;
  if (mine.count == ThreadCaches::kMax && !forget_dropped_cache(mine)) return nullptr;
  auto* c = new ThreadCache(p);
  {
    std::lock_guard<SpinLock> lock(p.mutex);
    p.thread_caches.push_back(c);
  }
  mine.caches[mine.count++] = c;
  return t_last_cache = c;
}

// Whether a block freed now may be handed out again at once (reuse_fence.h: none always, sync
// never, auto while the pool is quiet).
bool reuse_needs_no_fence(const ContextPool& p) {
  return p.backend.fence().quiet();
}

}  // namespace

bool thread_cache_alloc(ContextPool& p, std::size_t bytes, std::uintptr_t* ptr, CacheMiss* miss) {
  *miss = CacheMiss{};
  if (!p.thread_caching.load(std::memory_order_relaxed)) return false;
  // A kept block stays safe whatever work came after its free: it was kept only because the
  // pool was quiet then (thread_cache_free), and no later work may use a freed block.
  const std::size_t rounded = pool::round_size(bytes, p.pool.options());
  if (rounded > kLargestCachedBlock) return false;  // never kept: not worth tracking
  ThreadCache* c = cache_for(p, true);
  if (c == nullptr) return false;
  {
    std::lock_guard<SpinLock> lock(c->lock);
    if (!c->live.full()) {
      const int i = c->idle.find_rounded(rounded);
      if (i >= 0) {
        ++c->uses;
        const Entry e = c->take_idle(i);
        c->push_live(e);
        *ptr = e.ptr;
        return true;
      }
    }
  }
  *miss = CacheMiss{c, rounded};
  return false;
}

void thread_cache_track(ContextPool& p, const CacheMiss& miss, std::uintptr_t ptr,
                        std::size_t block_size) {
  // An unsplit block larger than the request may exceed what a cache keeps: left to the pool, so
  // every live entry (and every kept one) is at most kLargestCachedBlock.
  if (block_size > kLargestCachedBlock) return;
  ThreadCache& c = *miss.cache;
  std::lock_guard<SpinLock> lock(c.lock);
  if (c.live.full()) return;
  c.push_live(Entry{ptr, miss.rounded, block_size});
  p.pool.set_holder(ptr, holder_word(&c));
}

bool thread_cache_free(ContextPool& p, std::uintptr_t ptr) {
  if (!p.thread_caching.load(std::memory_order_relaxed)) return false;
  ThreadCache* c = cache_for(p, false);
  if (c == nullptr || c->live_count.load(std::memory_order_relaxed) == 0) return false;
  EntryList<kIdleSlots> to_pool;
  {
    std::lock_guard<SpinLock> lock(c->lock);
    const int i = c->live.find_ptr(ptr);
    if (i < 0) return false;
    const Entry e = c->remove_live(i);
    if (reuse_needs_no_fence(p)) {
      ++c->uses;
      c->keep(e, &to_pool);  // live entries are never larger than a cache keeps (track)
    } else {
      to_pool.push(e);
    }
  }
  // Entries out of both lists still name c as holder: a concurrent second free of one of them
  // finds it in neither list and is refused as a double free.
  if (to_pool.count > 0) {
    PoolLock lock(p);
    give_back(p, to_pool);
  }
  return true;
}

HeldBlock thread_cache_release_held(ContextPool& p, std::uintptr_t ptr) {
  const pool::Block* b = p.pool.find_allocated(ptr);
  if (b == nullptr || b->holder == 0) return HeldBlock::kNotHeld;
  auto* c = reinterpret_cast<ThreadCache*>(b->holder);
  {
    std::lock_guard<SpinLock> lock(c->lock);
    const int i = c->live.find_ptr(ptr);
    if (i < 0) return HeldBlock::kAlreadyFree;
    c->remove_live(i);
  }
  p.pool.set_holder(ptr, 0);
  return HeldBlock::kReleased;
}

bool thread_cache_holds_freed(const pool::Block& b) {
  if (b.holder == 0) return false;
  auto* c = reinterpret_cast<ThreadCache*>(b.holder);
  std::lock_guard<SpinLock> lock(c->lock);
  return c->live.find_ptr(b.ptr) < 0;
}

bool thread_cache_flush_all(ContextPool& p) {
  bool any = false;
  for (ThreadCache* c : p.thread_caches) any = return_kept(p, *c) || any;
  return any;
}

void thread_cache_idle_tick(ContextPool& p) {
  for (ThreadCache* c : p.thread_caches) {
    EntryList<kIdleSlots> kept;
    {
      std::lock_guard<SpinLock> lock(c->lock);
      if (c->idle.count == 0 || c->uses != c->uses_seen) {
        c->uses_seen = c->uses;
        c->quiet_ticks = 0;
        continue;
      }
      if (++c->quiet_ticks <= pool::kIdleTicks) continue;
      c->quiet_ticks = 0;
      kept = c->take_all_idle();
    }
    give_back(p, kept);
  }
}

std::size_t thread_cached_bytes(const ContextPool& p) {
  std::size_t total = 0;
  for (const ThreadCache* c : p.thread_caches) {
    total += c->idle_bytes.load(std::memory_order_relaxed);
  }
  return total;
}

}  // namespace cudapool::shim
