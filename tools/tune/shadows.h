// SPDX-License-Identifier: Apache-2.0
// tools/tune/shadows.h: settings that tune replays as shadows of another (pool/split_shadows.h).
// Settings equal in every key but max_split_size and max_non_split_rounding are one group: one of
// them is replayed, the others are watched beside it and take its figures, exactly, unless a
// decision of the replay told them apart (then they are replayed on their own). Which member of a
// group to replay is found on the first look (first_look.h): the look's batches are replayed with
// every group's first member, the members that part from it form a group of their own, and so on
// until no member parts; the pass then watches the rest of the log. Used only where the logs can be
// read again, so that a member that parts after the look can be replayed in a second pass. Not
// here: settings that replay alike by the sizes asked for (same_replay.h), the pass (pass.h).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "pool/split_shadows.h"
#include "tools/replay/recorded_log.h"
#include "tools/tune/pass.h"

namespace cudapool::tune {

// One setting replayed (an index into the confs) and the settings watched beside it.
struct ShadowGroup {
  std::size_t replayed = 0;
  std::vector<std::size_t> watched;
};

// The confs in groups of settings equal but for the two split limits, in the order of their
// first member; each group at most 1 + SplitShadows::kMax settings; every conf in one group.
std::vector<ShadowGroup> split_groups(const std::vector<std::string>& confs);

// What the pass replays for the groups: the replayed conf, the watched ones' limits.
std::vector<PassSetting> pass_settings(const std::vector<std::string>& confs,
                                       const std::vector<ShadowGroup>& groups);

// The groups after the first look: batches (the log's first, decoded by decoder) replayed with
// each group's first member until no watched member parts (see above).
std::vector<ShadowGroup> settle_on_look(
    replay::LogDecoder& decoder, const std::vector<std::string>& confs,
    std::vector<ShadowGroup> groups, const PassOptions& options,
    const std::deque<std::shared_ptr<const replay::EventBatch>>& batches);

}  // namespace cudapool::tune
