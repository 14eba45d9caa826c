// SPDX-License-Identifier: Apache-2.0
// tools/tune/tune_report.h: what cudapool tune prints. Text: per log a ranked table (peak
// reserved, its change against the log's own setting, peak allocated, reserved-over-allocated
// overhead, device allocations and frees, retries, OOMs), the worst-rank table when there are
// several logs, with a note under a table for each row whose pool filled the simulated device
// (full_device_note), the memory held over time under idle release ("Held over time": one row
// per idle variant tried, idle.h, or why none was), then the recommended conf string with why
// and its caveats. JSON (schema cudapool.tune/1): the same as one object (each row's
// "oversize_releases" and "note", "held_over_time"). Formatting only; the figures are the pass's
// (outcome.h) and idle.h's.
#pragma once

#include <string>
#include <vector>

#include "tools/tune/tune.h"

namespace cudapool::tune {

struct ReportContext {
  std::vector<std::string> paths;
  double seconds = 0.0;
  int threads = 1;
  std::size_t rows = 20;  // rows of each table in text (all in JSON)
};

// The note on a row whose pool filled the simulated device (or the fraction's share of it) and
// made room by giving back cached oversize blocks, which PyTorch counts as no retry
// (Outcome::oversize_releases): what happened and what a real run would do; "" for any other row.
std::string full_device_note(const Outcome& outcome);

std::string text_report(const TuneResult& result, const ReportContext& context);
std::string json_report(const TuneResult& result, const ReportContext& context);

}  // namespace cudapool::tune
