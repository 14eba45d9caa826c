// shim/recording/clock.cpp: see clock.h. Until calibrated (and always where the TSC is not
// invariant) a read is clock_gettime(CLOCK_MONOTONIC). The first read also notes the TSC; a read at
// least 50 ms later measures the TSC's rate against CLOCK_MONOTONIC over that span and publishes a
// calibration, from then on used with one rdtsc. After 5 s the rate is measured again over the
// longer span (about a hundred times more precise) and published anchored at the old calibration's
// value at that instant, so the clock never steps back. Left: the error of the second rate (parts
// per 10^8, under a millisecond a day) accumulates against CLOCK_MONOTONIC.
#include "shim/recording/clock.h"

#include <time.h>
#include <unistd.h>

#include <atomic>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace cudapool::shim {

namespace {

constexpr std::uint64_t kFirstCalibrationNs = 50'000'000;      // 50 ms
constexpr std::uint64_t kSecondCalibrationNs = 5'000'000'000;  // 5 s

struct Calibration {
  std::uint64_t tsc0 = 0;
  std::uint64_t ns0 = 0;
  double ns_per_tick = 0;
  std::uint64_t ns(std::uint64_t tsc) const {
    const auto ticks = static_cast<std::int64_t>(tsc - tsc0);
    return ns0 + static_cast<std::uint64_t>(static_cast<double>(ticks) * ns_per_tick);
  }
};

Calibration g_slots[2];  // written once each, before being published
std::atomic<const Calibration*> g_current{nullptr};
std::atomic<int> g_stage{0};  // 0: no sample; 1: first sample; 2: calibrated; 3: refined; -1: off
std::uint64_t g_first_tsc = 0;
std::uint64_t g_first_ns = 0;
std::atomic<bool> g_busy{false};  // one thread calibrates at a time

std::uint64_t clock_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__)
bool tsc_invariant() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
}
std::uint64_t tsc() {
  return __rdtsc();
}
#else
bool tsc_invariant() {
  return false;
}
std::uint64_t tsc() {
  return 0;
}
#endif

// The slow path: clock_gettime, and the calibration steps when they are due.
std::uint64_t slow_ns() {
  const std::uint64_t ns = clock_ns();
  const int stage = g_stage.load(std::memory_order_acquire);
  if (stage < 0 || stage == 3 || g_busy.exchange(true, std::memory_order_acquire)) return ns;
  const std::uint64_t t = tsc();
  if (stage == 0) {
    if (tsc_invariant()) {
      g_first_tsc = t;
      g_first_ns = ns;
      g_stage.store(1, std::memory_order_release);
    } else {
      g_stage.store(-1, std::memory_order_release);
    }
  } else if (t > g_first_tsc) {
    const std::uint64_t span = ns - g_first_ns;
    const std::uint64_t due = stage == 1 ? kFirstCalibrationNs : kSecondCalibrationNs;
    if (ns > g_first_ns && span >= due) {
      Calibration& next = g_slots[stage - 1];
      next.ns_per_tick = static_cast<double>(span) / static_cast<double>(t - g_first_tsc);
      next.tsc0 = t;
      // The first calibration starts at the clock's reading; the refined one where the first one
      // stands now, so that no reader sees time go back.
      const Calibration* old = g_current.load(std::memory_order_acquire);
      next.ns0 = old != nullptr ? old->ns(t) : ns;
      g_current.store(&next, std::memory_order_release);
      g_stage.store(stage + 1, std::memory_order_release);
    }
  }
  g_busy.store(false, std::memory_order_release);
  return ns;
}

}  // namespace

std::uint64_t monotonic_ns() {
  const Calibration* c = g_current.load(std::memory_order_acquire);
  if (c == nullptr) return slow_ns();
  const std::uint64_t t = tsc();
  const std::uint64_t now = c->ns(t);
  // Refinement is due once, 5 s after the first sample: take the slow path for that one read.
  if (g_stage.load(std::memory_order_relaxed) == 2 && now - g_first_ns >= kSecondCalibrationNs)
      [[unlikely]] {
    slow_ns();
    return g_current.load(std::memory_order_acquire)->ns(t);
  }
  return now;
}

std::uint64_t thread_id() {
  static thread_local std::uint64_t id = static_cast<std::uint64_t>(::gettid());
  return id;
}

}  // namespace cudapool::shim
