// SPDX-License-Identifier: Apache-2.0
// shim/support/clock.cpp: see clock.h. Until calibrated (and always where the TSC is not
// invariant) a read is clock_gettime(CLOCK_MONOTONIC). The first read also notes the TSC; a read at
// least 50 ms later measures the TSC's rate against CLOCK_MONOTONIC over that span and publishes a
// calibration, from then on used with one rdtsc. After 5 s the rate is measured again over the
// longer span (about a hundred times more precise) and published anchored at the later of the old
// calibration's value and CLOCK_MONOTONIC at that instant, so the clock never steps back. Each
// calibration point pairs a TSC value with CLOCK_MONOTONIC by bracketing the clock read between two
// TSC reads, the tightest of several tries: a thread preempted between the two reads (a loaded
// machine, CI's sanitizer runs) would otherwise pair values microseconds apart, and over 50 ms that
// is a rate off by 10^-4, a millisecond in the first 5 s. Left: the error of the second rate (parts
// per 10^8, under a millisecond a day) accumulates against CLOCK_MONOTONIC.
#include "shim/support/clock.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
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

// A TSC value and CLOCK_MONOTONIC read at (nearly) the same instant: the clock read bracketed by
// two TSC reads, the tightest bracket of kPairTries, the TSC taken at its middle.
struct Pair {
  std::uint64_t tsc = 0;
  std::uint64_t ns = 0;
};
constexpr int kPairTries = 8;
Pair paired_sample() {
  Pair best;
  std::uint64_t best_width = ~0ull;
  for (int i = 0; i < kPairTries; ++i) {
    const std::uint64_t t1 = tsc();
    const std::uint64_t ns = clock_ns();
    const std::uint64_t t2 = tsc();
    if (t2 < t1 || t2 - t1 >= best_width) continue;
    best_width = t2 - t1;
    best = {t1 + (t2 - t1) / 2, ns};
  }
  if (best_width == ~0ull) best = {tsc(), clock_ns()};
  return best;
}

// The slow path: clock_gettime, and the calibration steps when they are due.
std::uint64_t slow_ns() {
  const std::uint64_t ns = clock_ns();
  const int stage = g_stage.load(std::memory_order_acquire);
  if (stage < 0 || stage == 3 || g_busy.exchange(true, std::memory_order_acquire)) return ns;
  if (stage == 0) {
    if (tsc_invariant()) {
      const Pair p = paired_sample();
      g_first_tsc = p.tsc;
      g_first_ns = p.ns;
      g_stage.store(1, std::memory_order_release);
    } else {
      g_stage.store(-1, std::memory_order_release);
    }
  } else {
    const std::uint64_t due = stage == 1 ? kFirstCalibrationNs : kSecondCalibrationNs;
    if (ns > g_first_ns && ns - g_first_ns >= due) {
      const Pair p = paired_sample();
      if (p.tsc > g_first_tsc && p.ns > g_first_ns) {
        Calibration& next = g_slots[stage - 1];
        next.ns_per_tick =
            static_cast<double>(p.ns - g_first_ns) / static_cast<double>(p.tsc - g_first_tsc);
        next.tsc0 = p.tsc;
        // The first calibration starts at the clock's reading; the refined one there too unless
        // the first one already stands later, so that no reader sees time go back.
        const Calibration* old = g_current.load(std::memory_order_acquire);
        next.ns0 = old != nullptr ? std::max(old->ns(p.tsc), p.ns) : p.ns;
        g_current.store(&next, std::memory_order_release);
        g_stage.store(stage + 1, std::memory_order_release);
      }
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
    // The TSC read again after the calibration was loaded, so it is not before its anchor.
    const Calibration* refined = g_current.load(std::memory_order_acquire);
    return std::max(now, refined->ns(tsc()));
  }
  return now;
}

std::uint64_t thread_id() {
  static thread_local std::uint64_t id = static_cast<std::uint64_t>(::gettid());
  return id;
}

}  // namespace cudapool::shim
