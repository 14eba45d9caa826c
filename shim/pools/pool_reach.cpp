// SPDX-License-Identifier: Apache-2.0
// shim/pools/pool_reach.cpp: see pool_reach.h. The records form a list that only grows (a record
// of an exited thread is taken by the next new one); a thread finds its own through t_reader.
// Everything here is on slow paths: the hooks' fast path reads t_last_pool only.
#include "shim/pools/pool_reach.h"

#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace cudapool::shim {

namespace {

ContextPool* const kAllPools = reinterpret_cast<ContextPool*>(std::uintptr_t{1});
constexpr int kKept = 4;

struct PoolReader {
  std::atomic<ContextPool*> at{nullptr};
  std::atomic<ContextPool*> kept[kKept] = {};  // kAllPools in the first: more than fit
  std::atomic<ContextPool*> last{nullptr};
  std::atomic<bool> taken{false};  // by a live thread
  PoolReader* next = nullptr;      // set before the record is published, then never changed
};

// Constant-initialized: the first hooked call may come before the shim's static initializers.
std::atomic<PoolReader*> g_readers{nullptr};
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
pthread_key_t g_key;
bool g_key_made = false;
thread_local PoolReader* t_reader = nullptr;
thread_local int t_kept = 0;  // pools in the calling thread's kept

// Thread exit: a pthread key destructor, which runs after the thread's C++ thread_local
// destructors (whose CUDA calls, e.g. a thread cache's hand-back, may still look pools up); a
// lookup from a later key destructor takes a record again and sets the key again.
void release_reader(void*) {
  forget_last_pool();
  forget_kept_pools();
  PoolReader* r = t_reader;
  t_reader = nullptr;
  if (r == nullptr) return;
  r->at.store(nullptr, std::memory_order_release);
  r->taken.store(false, std::memory_order_release);
}

void make_key() {
  g_key_made = pthread_key_create(&g_key, release_reader) == 0;
}

// The calling thread's record, taken (or made) on its first slow path.
PoolReader& reader() {
  if (t_reader != nullptr) return *t_reader;
  pthread_once(&g_key_once, make_key);
  PoolReader* r = nullptr;
  for (PoolReader* it = g_readers.load(std::memory_order_acquire); it != nullptr && r == nullptr;
       it = it->next) {
    bool taken = false;
    if (it->taken.compare_exchange_strong(taken, true, std::memory_order_acq_rel)) r = it;
  }
  if (r == nullptr) {
    r = new PoolReader;
    r->taken.store(true, std::memory_order_relaxed);
    PoolReader* head = g_readers.load(std::memory_order_relaxed);
    do {
      r->next = head;
    } while (!g_readers.compare_exchange_weak(head, r, std::memory_order_release,
                                              std::memory_order_relaxed));
  }
  t_reader = r;
  if (g_key_made) pthread_setspecific(g_key, r);
  return *r;
}

}  // namespace

void set_last_pool(CUcontext ctx, unsigned long long id, ContextPool* p) {
  t_last_pool = LastPool{ctx, id, p};
  reader().last.store(p, std::memory_order_release);
}

void forget_last_pool() {
  t_last_pool = LastPool{};
  if (t_reader != nullptr) t_reader->last.store(nullptr, std::memory_order_release);
}

PoolWalk::PoolWalk() {
  reader();
}

PoolWalk::~PoolWalk() {
  if (!held_ && t_reader != nullptr) t_reader->at.store(nullptr, std::memory_order_release);
}

void PoolWalk::at(ContextPool* p) {
  t_reader->at.store(p, std::memory_order_seq_cst);
}

void forget_kept_pools() {
  if (t_reader == nullptr || t_kept == 0) return;
  for (std::atomic<ContextPool*>& kept : t_reader->kept) {
    kept.store(nullptr, std::memory_order_release);
  }
  t_kept = 0;
}

void keep_pool(ContextPool* p) {
  PoolReader& r = reader();
  if (t_kept < kKept) {
    r.kept[t_kept++].store(p, std::memory_order_release);  // the walk's `at` still covers it
  } else {
    r.kept[0].store(kAllPools, std::memory_order_release);
  }
}

bool out_of_other_threads_reach(const ContextPool& p) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (PoolReader* r = g_readers.load(std::memory_order_acquire); r != nullptr; r = r->next) {
    if (r == t_reader) continue;
    // `at` first: a release store to it may follow the thread's stores to kept and last.
    if (r->at.load(std::memory_order_acquire) == &p) return false;
    for (const std::atomic<ContextPool*>& kept : r->kept) {
      const ContextPool* k = kept.load(std::memory_order_acquire);
      if (k == &p || k == kAllPools) return false;
    }
    if (r->last.load(std::memory_order_acquire) == &p) return false;
  }
  return true;
}

}  // namespace cudapool::shim
