// SPDX-License-Identifier: Apache-2.0
// shim/pools/idle_release.cpp: see idle_release.h. The thread sleeps in poll() on a wake-up pipe
// (written at exit) until the next tick, then walks the live pools. Not here: what a tick releases
// (pool/device_pool_idle.cpp).
#include "shim/pools/idle_release.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

#include "shim/driver/real_driver.h"
#include "shim/pools/context_registry.h"
#include "shim/pools/context_scope.h"
#include "shim/pools/stream_capture.h"
#include "shim/pools/thread_cache.h"
#include "shim/support/clock.h"
#include "shim/support/diagnostics.h"
#include "shim/support/guard.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

namespace {

constinit pthread_t g_thread{};
constinit int g_wake[2] = {-1, -1};
constinit std::atomic<bool> g_running{false};
constinit pid_t g_owner = 0;

bool capturing() {
  return captures_in_progress().load(std::memory_order_acquire) > 0;
}

// One tick of p's idle clock; a release is preceded by a synchronization of p's context made
// without the lock, and the driver calls that give the memory back follow it without the lock.
void tick(ContextPool& p) {
  {
    std::lock_guard<SpinLock> lock(p.mutex);
    if (capturing()) return;
    thread_cache_idle_tick(p);  // blocks the threads' caches kept unused go back to the pool
    if (!p.pool.idle_release_due()) {
      p.pool.release_idle_tick();  // no memory goes back: only the clock moves
      return;
    }
  }
  if (!pool_alive(p)) return;  // its context went behind the shim's back: the pool is dropped
  {
    ContextScope scope(p.context);
    if (capturing()) return;
    // Blocks cached before this call (all that the tick can release: they were unused for whole
    // ticks) were freed after their last work was queued; once it returns, that work is done.
    real().cuCtxSynchronize();
  }
  CudaBackend::DeferredGiveBacks give_back;
  CUcontext context = nullptr;
  {
    std::lock_guard<SpinLock> lock(p.mutex);
    if (capturing() || p.dropped.load(std::memory_order_acquire)) return;
    p.backend.begin_deferred_give_back();
    p.pool.release_idle_tick();
    give_back = p.backend.end_deferred_give_back();
    context = p.context;
  }
  // The driver calls that give the memory back, without the lock: the program's allocations do
  // not wait behind them (cuda_backend.h).
  if (!give_back.empty()) p.backend.give_back(context, give_back);
}

void* idle_main(void*) {
  ReentrancyGuard guard;  // a hook reached from this thread passes straight through
  const std::uint64_t period = pool::idle_tick_ns(options());
  std::uint64_t next = monotonic_ns() + period;
  for (;;) {
    const std::uint64_t now = monotonic_ns();
    if (now < next) {
      pollfd fd{g_wake[0], POLLIN, 0};
      const int timeout_ms = static_cast<int>((next - now + 999999) / 1000000);
      const int n = ::poll(&fd, 1, timeout_ms);
      if (n > 0) break;  // stop
      if (n < 0 && errno != EINTR) {
        timespec pause{0, 100 * 1000 * 1000};
        nanosleep(&pause, nullptr);
      }
      continue;
    }
    // A tick missed by more than a period (the process was stopped) is not made up for.
    next = now - next > period ? now + period : next + period;
    if (capturing()) continue;
    for_each_pool([](ContextPool& p) {
      tick(p);
      return false;
    });
  }
  return nullptr;
}

void forget_after_fork_child() {
  if (!g_running.exchange(false, std::memory_order_relaxed)) return;
  ::close(g_wake[0]);  // the child has no thread
  ::close(g_wake[1]);
  g_wake[0] = g_wake[1] = -1;
}

}  // namespace

void start_idle_release() {
  if (options().idle_release_ms == 0) return;
  if (::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    warn("idle_release_ms: pipe: %s: memory stays cached", std::strerror(errno));
    return;
  }
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);  // the thread takes no signal of the program's
  const int rc = pthread_create(&g_thread, nullptr, idle_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (rc != 0) {
    warn("idle_release_ms: pthread_create: %s: memory stays cached", std::strerror(rc));
    return;
  }
  pthread_setname_np(g_thread, "cudapool-idle");
  g_owner = ::getpid();
  g_running.store(true, std::memory_order_release);
  pthread_atfork(nullptr, nullptr, forget_after_fork_child);
  std::atexit(stop_idle_release);
}

void stop_idle_release() {
  if (::getpid() != g_owner || !g_running.exchange(false, std::memory_order_acq_rel)) return;
  static constexpr char kStop = 's';
  (void)!::write(g_wake[1], &kStop, 1);
  timespec limit{};
  clock_gettime(CLOCK_REALTIME, &limit);
  limit.tv_sec += 2;
  if (pthread_timedjoin_np(g_thread, nullptr, &limit) != 0) {
    warn("idle-release thread: still busy at exit after 2 s; leaving it");
  }
}

}  // namespace cudapool::shim
