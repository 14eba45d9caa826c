// SPDX-License-Identifier: Apache-2.0
// pool/split_shadows.h: the two split rules that read max_split_size and max_non_split_rounding,
// defined once for the pool, and other values of those two keys watched beside a pool's own for
// the replay (cudapool tune): a shadow parts from the pool at the first decision its own values
// would have made otherwise. Until it parts, the pool's run is exactly the run a pool with the
// shadow's values would have had: every other decision of the pool reads neither key (the
// statistics of oversize blocks do, and are no decision), so the same requests meet the same
// state. The pool reads the two keys in three places: whether a cached block found for a request
// may serve it (takes()), whether the block is split (splits()), and the release of oversize
// blocks after an out-of-memory (which parts every shadow of another max_split_size). Not used by
// the shim; not here: which settings tune watches this way (tools/tune/shadows.h).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "config/options.h"

namespace cudapool::pool {

struct SplitLimits {
  std::size_t max_split_size = 0;
  std::size_t max_non_split_rounding = 0;

  static SplitLimits of(const config::Options& o) {
    return SplitLimits{o.max_split_size, o.max_non_split_rounding};
  }
  // A cached block of `block` bytes (the smallest large enough on the stream) for a request of
  // `size` bytes (rounded): a request below the limit never takes an oversize block; an oversize
  // request takes an oversize block only within max_non_split_rounding of its size.
  bool takes(std::size_t size, std::size_t block) const {
    if (size < max_split_size && block >= max_split_size) return false;
    return !(size >= max_split_size && block >= size + max_non_split_rounding);
  }
  // A block of the large pool (not of an expandable segment) with more than kSmallSize left over
  // after a request of `size` bytes is split when the request is below the limit.
  bool splits(std::size_t size) const { return size < max_split_size; }
};

class SplitShadows {
 public:
  static constexpr std::size_t kMax = 64;

  // Watches one more pair of values; false when kMax are watched already.
  bool add(SplitLimits limits) {
    if (count_ == kMax) return false;
    limits_[count_] = limits;
    watching_ |= std::uint64_t{1} << count_;
    ++count_;
    return true;
  }
  // Bit i: shadow i (in the order added) has parted.
  std::uint64_t parted() const { return parted_; }
  // Whether any shadow is still watched (not parted).
  bool watching() const { return watching_ != 0; }

  // The pool took (or refused) a block of `block` bytes for a request of `size` bytes.
  void offered(std::size_t size, std::size_t block, bool took) {
    part_where([&](const SplitLimits& l) { return l.takes(size, block) != took; });
  }
  // The pool split (or did not split) a block for a request of `size` bytes, with more than
  // kSmallSize left over.
  void split(std::size_t size, bool split) {
    part_where([&](const SplitLimits& l) { return l.splits(size) != split; });
  }
  // The pool releases oversize blocks, searching from its max_split_size.
  void releasing_oversize(std::size_t max_split_size) {
    part_where([&](const SplitLimits& l) { return l.max_split_size != max_split_size; });
  }

 private:
  // Parts every shadow still watched whose limits make `differs` true.
  template <class Differs>
  void part_where(Differs differs) {
    for (std::uint64_t w = watching_; w != 0; w &= w - 1) {
      const int i = std::countr_zero(w);
      if (differs(limits_[i])) {
        parted_ |= std::uint64_t{1} << i;
        watching_ &= ~(std::uint64_t{1} << i);
      }
    }
  }

  SplitLimits limits_[kMax] = {};
  std::size_t count_ = 0;
  std::uint64_t watching_ = 0;
  std::uint64_t parted_ = 0;
};

}  // namespace cudapool::pool
