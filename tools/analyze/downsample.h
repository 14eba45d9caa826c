// SPDX-License-Identifier: Apache-2.0
// tools/analyze/downsample.h: a time series of samples with kValues values each, cut down while
// it streams to at most a fixed number of points, every peak and trough kept exact: the rule of
// tests/oracle/downsample.py, kept exactly (the same points for the same samples).
// The time axis is cut into at most (limit - 2) / (2 * kValues) buckets of equal width (1000 at
// first); each keeps, for each value, the sample where it is lowest and the one where it is
// highest (the first of equal ones); when a sample falls past the last bucket the width doubles
// and neighbouring buckets merge. The first and the last sample are always kept. Memory: the
// buckets in use, whatever the series' length. Not here: what the values are (timeline.h).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "tools/analyze/figure.h"

namespace cudapool::analyze {

inline constexpr std::size_t kValues = 4;
using Values = std::array<Figure, kValues>;

struct Sample {
  std::uint64_t t = 0;
  std::uint64_t n = 0;  // its place in the series
  Values values{};
};

class Downsampler {
 public:
  explicit Downsampler(std::size_t limit)
      : buckets_max_(std::max<std::size_t>(1, (limit - 2) / (2 * kValues))) {}

  void add(std::uint64_t t, const Values& values);
  // The samples kept, in the order added.
  std::vector<Sample> points() const;
  std::uint64_t width() const { return width_; }

 private:
  using Bucket = std::array<Sample, 2 * kValues>;  // low and high of each value
  void coarsen();

  std::uint64_t buckets_max_;
  std::uint64_t width_ = 1000;
  bool started_ = false;
  std::uint64_t t0_ = 0;
  std::vector<std::pair<std::uint64_t, Bucket>> buckets_;  // by index, increasing
  Sample first_, last_;
  std::uint64_t n_ = 0;
};

}  // namespace cudapool::analyze
