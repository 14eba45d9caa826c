// SPDX-License-Identifier: Apache-2.0
// tools/analyze/replayed.h: the pool's decisions for a log that has none. A log of requests alone
// (alloc and free events without block sizes or segments: a synthetic log, or one converted from
// another tool's trace) says nothing of segments and blocks; the replay does
// (tools/replay/replayer.h over pool/DevicePool, under the log's own settings). Here it runs in
// the same process and the same pass as the analysis: every line of the log goes to the
// Replayer too, whose writer (log_writer.h, as `cudapool-replay --write-log` writes) hands its
// decisions over as records, not lines: each goes into a second LogAnalysis as the event its line
// would decode to (the header, the summary and an oom event with its figures go as their lines).
// No temporary file, no formatting and parsing again, and the same figures as reading the
// replay's log (tests/oracle/replayed.py). Not here: deciding whether a log needs it
// (a pool decision in its first kScanLines lines, analysis.h pool_decision()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "log/record.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/report.h"
#include "tools/replay/log_writer.h"
#include "tools/replay/replayer.h"

namespace cudapool::analyze {

inline constexpr std::uint64_t kScanLines = 5000;  // replayed.py SCAN_LINES

// The event a record's line decodes to (log_line.h), when it has one that needs no line: false
// for an oom event (its figures are read from the line's fields), a device the log cannot name
// (read as the malformed line it is) and a record with fields no pool event has (a backtrace, a
// stream event's entry and caller: read from the line). e->record is r (written_field.h).
bool event_of_record(const log::LogRecord& r, Event* e);

class RequestReplay : private replay::RecordSink {
 public:
  // name: the log's, for the replay log's header; level: the report's (held_report.h).
  explicit RequestReplay(const std::string& name, const HeldLevel& level = {});
  ~RequestReplay() override;
  RequestReplay(const RequestReplay&) = delete;
  RequestReplay& operator=(const RequestReplay&) = delete;

  void feed(std::uint64_t line_number, std::string_view line) {
    replayer_->feed(line_number, line);
  }
  void feed_too_long(std::uint64_t line_number) { replayer_->feed_too_long(line_number); }
  // The log's end: the replay finishes, its summary goes in and the analysis ends.
  void finish();

  const LogAnalysis& analysis() const { return analysis_; }
  // Given each event of the replay's log (an export that follows it: event_hook.h).
  void follow(std::unique_ptr<EventHook> hook) { analysis_.hook = std::move(hook); }
  const Report& report() const { return report_; }

 private:
  void line(std::string_view text) override;
  void record(const log::LogRecord& r) override;

  replay::PoolLogWriter writer_;
  std::unique_ptr<replay::Replayer> replayer_;
  LogAnalysis analysis_;  // no sites, no request sizes (the constructor)
  Report report_;
  std::uint64_t lines_ = 0;
  LastLine last_;
};

}  // namespace cudapool::analyze
