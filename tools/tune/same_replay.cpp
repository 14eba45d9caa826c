// SPDX-License-Identifier: Apache-2.0
// tools/tune/same_replay.cpp: see same_replay.h.
#include "tools/tune/same_replay.h"

#include <algorithm>

#include "config/parse.h"
#include "pool/constants.h"
#include "pool/rounding.h"

namespace cudapool::tune {

namespace {

struct Setting {
  config::Options rest;               // the keys that tell settings apart, classes in place
  std::vector<std::uint64_t> blocks;  // the block of each size
};

Setting setting_of(const std::string& conf, const std::vector<std::uint64_t>& sizes) {
  Setting s;
  s.rest = config::parse_conf(conf).options;
  s.blocks.reserve(sizes.size());
  for (const std::uint64_t size : sizes) s.blocks.push_back(pool::round_size(size, s.rest));
  s.rest.roundup_power2_divisions = {};
  // A large segment (large_segment_size, for requests of 1 to 10 MiB) is split by any request
  // below the limit: its pieces take any size below it, so a limit below it is not a class.
  const bool large_segments = std::any_of(s.blocks.begin(), s.blocks.end(), [](std::uint64_t b) {
    return b > pool::kSmallSize && b < pool::kMinLargeAlloc;
  });
  if (!s.rest.expandable_segments &&
      !(large_segments && s.rest.max_split_size < s.rest.large_segment_size)) {
    std::vector<std::uint64_t> compared = s.blocks;
    for (const std::uint64_t block : s.blocks) {
      compared.push_back(pool::segment_size_for(block, s.rest));
    }
    std::sort(compared.begin(), compared.end());
    compared.erase(std::unique(compared.begin(), compared.end()), compared.end());
    s.rest.max_split_size = static_cast<std::size_t>(
        std::lower_bound(compared.begin(), compared.end(), s.rest.max_split_size) -
        compared.begin());
  }
  return s;
}

}  // namespace

std::vector<std::size_t> replayed_as(const std::vector<std::string>& confs,
                                     const std::vector<std::uint64_t>& sizes) {
  std::vector<Setting> settings;
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < confs.size(); ++k) {
    Setting s = setting_of(confs[k], sizes);
    std::size_t as = k;
    for (std::size_t j = 0; j < k; ++j) {
      if (out[j] == j && settings[j].rest == s.rest && settings[j].blocks == s.blocks) {
        as = j;
        break;
      }
    }
    out.push_back(as);
    settings.push_back(std::move(s));
  }
  return out;
}

}  // namespace cudapool::tune
