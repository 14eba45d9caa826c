// SPDX-License-Identifier: Apache-2.0
// tools/analyze/downsample.cpp: see downsample.h.
#include "tools/analyze/downsample.h"

#include <map>

namespace cudapool::analyze {

void Downsampler::add(std::uint64_t t, const Values& values) {
  if (started_ && t < last_.t) t = last_.t;
  const Sample p{t, n_++, values};
  if (!started_) {
    started_ = true;
    t0_ = t;
    first_ = p;
  }
  last_ = p;
  std::uint64_t i = (t - t0_) / width_;
  while (i >= buckets_max_) {
    coarsen();
    i = (t - t0_) / width_;
  }
  // Times never go back, so the sample's bucket is the last one or a new one after it.
  if (buckets_.empty() || buckets_.back().first != i) {
    Bucket b;
    b.fill(p);
    buckets_.emplace_back(i, b);
    return;
  }
  Bucket& b = buckets_.back().second;
  for (std::size_t j = 0; j < kValues; ++j) {
    const Figure x = values[j];
    if (x < b[2 * j].values[j]) {
      b[2 * j] = p;
    } else if (x > b[2 * j + 1].values[j]) {
      b[2 * j + 1] = p;
    }
  }
}

void Downsampler::coarsen() {
  width_ *= 2;
  std::vector<std::pair<std::uint64_t, Bucket>> merged;
  for (const auto& [i, b] : buckets_) {
    if (merged.empty() || merged.back().first != i / 2) {
      merged.emplace_back(i / 2, b);
      continue;
    }
    Bucket& into = merged.back().second;  // it holds the earlier samples: it wins ties
    for (std::size_t j = 0; j < kValues; ++j) {
      if (b[2 * j].values[j] < into[2 * j].values[j]) into[2 * j] = b[2 * j];
      if (b[2 * j + 1].values[j] > into[2 * j + 1].values[j]) into[2 * j + 1] = b[2 * j + 1];
    }
  }
  buckets_ = std::move(merged);
}

std::vector<Sample> Downsampler::points() const {
  std::map<std::uint64_t, const Sample*> kept;
  for (const auto& [i, b] : buckets_) {
    for (const Sample& p : b) kept[p.n] = &p;
  }
  if (started_) {
    kept[first_.n] = &first_;
    kept[last_.n] = &last_;
  }
  std::vector<Sample> out;
  out.reserve(kept.size());
  for (const auto& [n, p] : kept) out.push_back(*p);
  return out;
}

}  // namespace cudapool::analyze
