// SPDX-License-Identifier: Apache-2.0
// pool/summary.h: statistics as a text table laid out like PyTorch's torch.cuda.memory_summary(),
// so that users of both read it the same way: one formatter for the shim's pool::DeviceStats (every
// statistic there, each a figure) and for statistics read back from a log (`cudapool report`,
// tools/analyze/stats_table.h), where some may be missing (a summary line that lacks them) or be
// figures no device can have (an inconsistent log). Formatting only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pool/stats.h"

namespace cudapool::pool {

// One statistic as the table reads it.
struct SummaryCell {
  // The value when a device can have it (0 to 2^64 - 1); none when it cannot (negative, or 2^64
  // or more): its cells say "impossible", and a pool's row beside it takes its own unit.
  std::optional<std::uint64_t> figure;
  std::string text;  // the value in decimal, whatever it is (the header's and last line's counts)
};

// The statistic of a torch.cuda.memory_stats() name ("allocated_bytes.all.current"), or nullptr
// when the statistics lack it.
using SummaryLookup = std::function<const SummaryCell*(std::string_view name)>;

// The table's lines (each "|...|", 77 characters when its values fit), device: the ordinal shown.
// A row is left out when one of its 4 statistics is missing (a metric's pool rows with its row of
// the whole device); the header's OOMs and retries say "-" when missing; the last line comes when
// num_device_alloc or num_device_free is there, "-" for the other. abbreviated: no pool rows.
std::vector<std::string> memory_summary_lines(const SummaryLookup& lookup, int device,
                                              bool abbreviated = false);

// The table of a pool's statistics, lines ended by '\n'.
std::string memory_summary(const DeviceStats& stats, int device, bool abbreviated = false);

}  // namespace cudapool::pool
