// SPDX-License-Identifier: Apache-2.0
// tools/analyze/stats_table.h: a device's statistics in the report (report.h DeviceReport: the
// summary line's, or what the events imply; exact, possibly impossible, possibly not all there) as
// the lines of pool/summary.h's memory_summary() table, the formatter the shim prints its own
// statistics with: the report's "summary_table" (docs/analysis-format.md), which `cudapool report`
// prints as it is. Not here: the layout of the table (pool/summary.cpp), the JSON (report_json.h).
#pragma once

#include <string>
#include <vector>

#include "tools/analyze/report.h"

namespace cudapool::analyze {

std::vector<std::string> summary_table(const DeviceReport& d);

}  // namespace cudapool::analyze
