// SPDX-License-Identifier: Apache-2.0
// tools/analyze/event_hook.h: an export that follows a log event by event (the Perfetto trace:
// perfetto_trace.h; the memory_viz snapshot: memviz_trace.h): what it is given of each event the
// analysis takes (analysis.h): the line's number, the decoded event (with what its line wrote
// that the exports show: written_field.h) and its device's counters after it. Called once per
// event of a device taken (device_gate.h), after the event is counted; then the log's end; then
// it writes its object into the engine's document (analyze_log.h). Not here: any output
// (perfetto_trace.h, memviz_trace.h), which export a run makes (analyze_log.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "tools/analyze/accounting.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/log_line.h"

namespace cudapool::analyze {

class LogAnalysis;

// What an export's object says besides what it followed.
struct ExportInputs {
  const LogAnalysis& followed;  // the analysis it followed: the log's, or its replay's (replayed)
  const LogAnalysis& log;       // the log's own
  bool replayed;                // a log of requests only: it followed the replay
  const std::string& cut;       // what the input said of ending in a compressed frame, or ""
};

class EventHook {
 public:
  virtual ~EventHook() = default;
  virtual void event(std::uint64_t line, const Event& e, const DeviceState& d) = 0;
  // The log's end, after its last event.
  virtual void finish() {}
  // Its object in the document, under key() ("perfetto", "memviz": docs/analysis-format.md).
  virtual const char* key() const = 0;
  virtual void write(JsonOut& out, const ExportInputs& in) const = 0;
};

}  // namespace cudapool::analyze
