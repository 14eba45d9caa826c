// SPDX-License-Identifier: Apache-2.0
// tools/analyze/timeline.h: a device's allocated, reserved, active and reserved - allocated bytes
// over time, downsampled (downsample.h) as the events come, for the page's charts: the rule of
// tests/oracle/timeline.py. A sample is taken after every event that changes the
// state (kStateActions); events that mark a moment (oom, empty_cache, segment_refused) are kept as
// times, the first kMaxMarks of the log. Every peak is exact, at the time it was first reached.
// Not here: the counters (accounting.h), writing it (page_json.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/analyze/downsample.h"

namespace cudapool::analyze {

inline constexpr std::size_t kTimelineBuckets = 4096;
inline constexpr std::size_t kMaxMarks = 1000;  // in a log, of all devices
inline constexpr std::size_t kMaxPageOoms = 1000;

struct DeviceTimeline {
  Downsampler samples{2 * kValues * kTimelineBuckets + 2};
  std::uint64_t changes = 0;
  std::uint64_t last_line = 0;  // the device's last event
  // action -> t_ns, the actions in the order of their first mark (as the Python pass lists them)
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> marks;
  std::vector<std::uint64_t>& marks_of(std::string_view action) {
    for (auto& [name, times] : marks)
      if (name == action) return times;
    return marks.emplace_back(std::string(action), std::vector<std::uint64_t>{}).second;
  }
};

}  // namespace cudapool::analyze
