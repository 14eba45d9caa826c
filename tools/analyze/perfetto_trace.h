// SPDX-License-Identifier: Apache-2.0
// tools/analyze/perfetto_trace.h: what `cudapool export --perfetto` draws of one log
// (scripts/cudapool_analysis/perfetto.py writes the trace from it; docs/analysis-format.md,
// "perfetto"): per device the allocated, reserved, active and reserved - allocated bytes after
// every event that changes the state, downsampled to at most max_points points with every peak
// exact (downsample.h, the rule of downsample.py: the same points), and the instant events (oom,
// segment_refused, empty_cache, segment and context events, stream events): the first
// max_instants of each device and action with the fields the trace shows, the others counted.
// Times are the events' t_ns (the wall clock is Python's: clock.py). Memory: the points' buckets
// and the instants kept, whatever the log's length. Not here: the counting (accounting.h), the
// trace's JSON (perfetto.py).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/downsample.h"
#include "tools/analyze/event_hook.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/json_value.h"

namespace cudapool::analyze {

class PerfettoTrace : public EventHook {
 public:
  // max_points: at least 10 (perfetto.py MAX_POINTS 20000, MAX_INSTANTS 2000 by default).
  PerfettoTrace(std::size_t max_points, std::size_t max_instants)
      : max_points_(max_points), max_instants_(max_instants) {}
  void event(std::uint64_t line, const Event& e, const DeviceState& d) override;
  // The log's "perfetto" object: the header is the log's own, the rest of the analysis this
  // trace followed (the replay's for a log of requests: replayed).
  const char* key() const override { return "perfetto"; }
  void write(JsonOut& out, const ExportInputs& in) const override;

 private:
  struct Instant {
    std::uint64_t t_ns, size, ptr;
    int dev;
    std::string action;
    // The trace's fields the event carries (perfetto.py INSTANT_FIELDS), as parsed.
    std::vector<std::pair<const char*, JsonValue>> fields;
  };
  std::size_t max_points_, max_instants_;
  std::map<int, std::unique_ptr<Downsampler>> series_;
  std::vector<Instant> instants_;
  std::map<std::pair<int, std::string>, std::uint64_t> instant_counts_;
};

}  // namespace cudapool::analyze
