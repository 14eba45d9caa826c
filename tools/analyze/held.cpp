// SPDX-License-Identifier: Apache-2.0
// tools/analyze/held.cpp: see held.h.
#include "tools/analyze/held.h"

namespace cudapool::analyze {

void HeldTimes::add(Figure value, std::uint64_t ns) {
  if (ns == 0) return;  // a figure set and changed at the same time: held for no time
  const auto [it, fresh] = bins_.try_emplace(value >> shift_, Bin{0, value, value});
  Bin& b = it->second;
  b.ns += ns;  // every bin's time is part of the span: no overflow
  if (value < b.lo) b.lo = value;
  if (value > b.hi) b.hi = value;
  if (fresh && bins_.size() > kHeldBins) coarsen();
}

void HeldTimes::coarsen() {
  // Twice as wide, until at most half the bins are left: neighbours merge, their times added.
  while (bins_.size() > kHeldBins / 2 && shift_ < 127) {
    ++shift_;
    std::map<Figure, Bin> wider;
    for (const auto& [key, b] : bins_) {
      const auto [it, fresh] = wider.try_emplace(key >> 1, b);
      if (fresh) continue;
      Bin& w = it->second;
      w.ns += b.ns;
      if (b.lo < w.lo) w.lo = b.lo;
      if (b.hi > w.hi) w.hi = b.hi;
    }
    bins_.swap(wider);
  }
}

HeldTimes::Above HeldTimes::above(Figure level) const {
  Above out;
  for (const auto& [key, b] : bins_) {
    if (b.lo > level) {
      out.ns += b.ns;
    } else if (b.hi > level) {
      out.unsure_ns += b.ns;
    }
  }
  return out;
}

void HeldSeries::close(std::uint64_t t, HeldTimes* times) {
  const std::uint64_t ns = t - since_;
  since_ = t;
  if (times != nullptr) times->add(value_, ns);
  if (overflow_ || ns == 0 || value_ == 0) return;
  Figure part = 0;
  if (__builtin_mul_overflow(value_, static_cast<Figure>(ns), &part) ||
      __builtin_add_overflow(area_, part, &area_)) {
    overflow_ = true;
  }
}

}  // namespace cudapool::analyze
