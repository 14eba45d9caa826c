// SPDX-License-Identifier: Apache-2.0
// tools/tune/shadows.cpp: see shadows.h.
#include "tools/tune/shadows.h"

#include <algorithm>

#include "config/parse.h"

namespace cudapool::tune {

namespace {

config::Options without_split_limits(const std::string& conf) {
  config::Options o = config::parse_conf(conf).options;
  o.max_split_size = 0;
  o.max_non_split_rounding = 0;
  return o;
}

// Members (indexes) in groups of the first and at most kMax watched.
void add_group(std::vector<std::size_t> members, std::vector<ShadowGroup>* out) {
  for (std::size_t first = 0; first < members.size(); first += 1 + pool::SplitShadows::kMax) {
    const std::size_t end = std::min(members.size(), first + 1 + pool::SplitShadows::kMax);
    ShadowGroup g;
    g.replayed = members[first];
    g.watched.assign(members.begin() + static_cast<std::ptrdiff_t>(first) + 1,
                     members.begin() + static_cast<std::ptrdiff_t>(end));
    out->push_back(std::move(g));
  }
}

}  // namespace

std::vector<ShadowGroup> split_groups(const std::vector<std::string>& confs) {
  std::vector<config::Options> keys;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t k = 0; k < confs.size(); ++k) {
    config::Options key = without_split_limits(confs[k]);
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(std::move(key));
      members.push_back({k});
    } else {
      members[static_cast<std::size_t>(it - keys.begin())].push_back(k);
    }
  }
  std::vector<ShadowGroup> out;
  for (std::vector<std::size_t>& m : members) add_group(std::move(m), &out);
  return out;
}

std::vector<PassSetting> pass_settings(const std::vector<std::string>& confs,
                                       const std::vector<ShadowGroup>& groups) {
  std::vector<PassSetting> out;
  for (const ShadowGroup& g : groups) {
    PassSetting s{confs[g.replayed], {}};
    for (const std::size_t w : g.watched) {
      s.shadows.push_back(pool::SplitLimits::of(config::parse_conf(confs[w]).options));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<ShadowGroup> settle_on_look(
    replay::LogDecoder& decoder, const std::vector<std::string>& confs,
    std::vector<ShadowGroup> groups, const PassOptions& options,
    const std::deque<std::shared_ptr<const replay::EventBatch>>& batches) {
  std::vector<ShadowGroup> settled;
  PassOptions look = options;
  look.decoded_only = true;
  look.until_parted = true;
  while (!groups.empty()) {
    std::vector<ShadowGroup> watching, parted_groups;
    for (ShadowGroup& g : groups) {
      (g.watched.empty() ? settled : watching).push_back(std::move(g));
    }
    if (watching.empty()) break;
    look.threads = std::clamp(options.threads, 1, static_cast<int>(watching.size()));
    const std::vector<PassResult> results =
        replay_pass(decoder, pass_settings(confs, watching), look, batches);
    for (std::size_t i = 0; i < watching.size(); ++i) {
      ShadowGroup stay{watching[i].replayed, {}};
      std::vector<std::size_t> parted;
      for (std::size_t w = 0; w < watching[i].watched.size(); ++w) {
        const bool apart = (results[i].parted >> w & 1) != 0;
        (apart ? parted : stay.watched).push_back(watching[i].watched[w]);
      }
      settled.push_back(std::move(stay));
      if (!parted.empty()) add_group(std::move(parted), &parted_groups);
    }
    groups = std::move(parted_groups);
  }
  std::sort(settled.begin(), settled.end(),
            [](const ShadowGroup& a, const ShadowGroup& b) { return a.replayed < b.replayed; });
  return settled;
}

}  // namespace cudapool::tune
