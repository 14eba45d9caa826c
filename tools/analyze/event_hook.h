// tools/analyze/event_hook.h: what an output that follows a log event by event (the Perfetto
// trace: perfetto_trace.h) is given of each event the analysis takes (analysis.h): the line's
// number and text, the decoded event, and its device's counters after it. Called once per event
// of a device taken (device_gate.h), after the event is counted; then the log's end. Not here:
// any output (perfetto_trace.h, memviz_trace.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "tools/analyze/accounting.h"
#include "tools/analyze/log_line.h"

namespace cudapool::analyze {

class EventHook {
 public:
  virtual ~EventHook() = default;
  virtual void event(std::uint64_t line, std::string_view text, const Event& e,
                     const DeviceState& d) = 0;
  // The log's end, after its last event.
  virtual void finish() {}
};

}  // namespace cudapool::analyze
