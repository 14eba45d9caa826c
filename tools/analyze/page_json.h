// SPDX-License-Identifier: Apache-2.0
// tools/analyze/page_json.h: what the HTML page shows of one log, as the JSON object
// tests/oracle/pagedata.py gather() makes (field by field in
// docs/analysis-format.md): the run, per device the peaks, the downsampled timeline, the segment
// maps at the reserved peak and at the end, the bytes each allocation site holds at the
// allocated peak; the oom events explained, the leaks grouped by stack, the allocation sites
// with their frames named. A log of requests only carries the replay's layout beside it
// ("replay", replayed.h). The charts' common time axis of several logs
// (scripts/cudapool_analysis/timeaxis.py one_clock) is the renderer's: each timeline's offset_s is
// 0 here. Not here: the figures (analysis.h, report.h).
#pragma once

#include <cstddef>

#include "tools/analyze/analysis.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/report.h"
#include "tools/analyze/report_json.h"

namespace cudapool::analyze {

// The replay of a log of requests: its analysis and report (none for a log with pool decisions).
struct ReplayPart {
  const LogAnalysis* analysis = nullptr;
  const Report* report = nullptr;
};

void write_page(JsonOut& out, const LogAnalysis& a, const Report& r, const RankRow& row,
                std::size_t index, const ReplayPart& replay);

}  // namespace cudapool::analyze
