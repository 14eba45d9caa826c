// SPDX-License-Identifier: Apache-2.0
// bench/training_log/random.h: the generator's pseudo-random numbers: splitmix64, the same
// sequence for a seed on every machine and compiler (std::uniform_int_distribution is not), and
// the few draws the workload and the clock make. Not for anything but the generated logs.
#pragma once

#include <cstdint>

namespace cudapool::bench {

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // In [0, n) (uniform enough for a benchmark's jitter); 0 when n is 0.
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
  // Uniform in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
  // A duration around mean_ns: uniform in [mean/4, 7*mean/4] (mean kept, never 0).
  std::uint64_t around(std::uint64_t mean_ns) {
    return mean_ns / 4 + below(mean_ns * 3 / 2 + 1) + 1;
  }

 private:
  std::uint64_t state_;
};

}  // namespace cudapool::bench
