// SPDX-License-Identifier: Apache-2.0
// tools/analyze/analyze_log.h: one log through the engine, start to end: its stream tapped
// (input_tap.h), split into lines by the replay's reader (log/read/line_reader.h), each line
// into the analysis (analysis.h) and, while the log may be one of requests only, into the
// in-process replay (replayed.h); then the report, its cross-rank row and the page's data. The
// input is any std::istream: a decompressing stream slots in where the file is opened
// (main.cpp). Not here: the command line.
#pragma once

#include <cstddef>
#include <functional>
#include <istream>
#include <memory>
#include <string>

#include "tools/analyze/analysis.h"
#include "tools/analyze/replayed.h"
#include "tools/analyze/report.h"
#include "tools/analyze/report_json.h"

namespace cudapool::analyze {

struct LogResult {
  LogAnalysis analysis;
  std::unique_ptr<RequestReplay> replay;  // a log of requests only
  Report report;
  RankRow row;
  std::uint64_t bytes = 0;
  // What the input said of ending in the middle of a compressed frame, or "".
  std::string cut;
  // The analysis an export follows (with options.perfetto or options.memviz its hook holds the
  // export's data): the log's, or for a log of requests its replay's.
  const LogAnalysis& followed() const { return replay ? replay->analysis() : analysis; }
};

// One log as the engine reads it.
struct LogSource {
  std::istream& in;
  std::string name;   // the log as shown
  std::string path;   // as given (for the replay's header)
  std::size_t index;  // its place among the logs (its cross-rank row)
  // Once in has ended: "" or what to say of a compressed input that ended in the middle of a
  // frame (ending.h); none: "".
  std::function<std::string()> cut;
};

// Never throws on bad input.
std::unique_ptr<LogResult> analyze_log(const LogSource& source, const AnalysisOptions& options);

// The document of several logs' results ("schema": "cudapool.analysis/1"): per log its report
// and (with page) its page, then the cross-rank table.
std::string analysis_document(const std::vector<std::unique_ptr<LogResult>>& logs, bool page);

inline constexpr const char* kAnalysisSchema = "cudapool.analysis/1";

}  // namespace cudapool::analyze
