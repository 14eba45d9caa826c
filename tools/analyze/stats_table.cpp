// SPDX-License-Identifier: Apache-2.0
// tools/analyze/stats_table.cpp: see stats_table.h.
#include "tools/analyze/stats_table.h"

#include <map>
#include <string_view>

#include "pool/summary.h"

namespace cudapool::analyze {

std::vector<std::string> summary_table(const DeviceReport& d) {
  std::map<std::string_view, pool::SummaryCell, std::less<>> cells;
  for (const auto& [name, value] : d.stats) {
    pool::SummaryCell c;
    if (possible(value)) c.figure = static_cast<std::uint64_t>(value);
    c.text = figure_text(value);
    cells.emplace(name, std::move(c));  // names are unique (a summary line repeats none)
  }
  return pool::memory_summary_lines(
      [&](std::string_view name) -> const pool::SummaryCell* {
        const auto it = cells.find(name);
        return it == cells.end() ? nullptr : &it->second;
      },
      d.dev);
}

}  // namespace cudapool::analyze
