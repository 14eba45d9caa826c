// tools/analyze/replayed.h: the pool's decisions for a log that has none. A log of requests alone
// (alloc and free events without block sizes or segments: a synthetic log, or one converted from
// another tool's trace) says nothing of segments and blocks; the replay does
// (tools/replay/replayer.h over pool/DevicePool, under the log's own settings). Here it runs in
// the same process and the same pass as the analysis: every line of the log goes to the
// Replayer too, which writes its decisions as a cudapool.log/1 stream (log_writer.h, as
// `cudapool-replay --write-log` does), and that stream goes line by line, as it is written, into
// a second LogAnalysis: no temporary file, and the same figures as reading the replay's log
// (scripts/cudapool_analysis/replayed.py). Not here: deciding whether a log needs it (a pool
// decision in its first kScanLines lines, analysis.h pool_decision()).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "tools/analyze/analysis.h"
#include "tools/analyze/report.h"
#include "tools/replay/log_writer.h"
#include "tools/replay/replayer.h"

namespace cudapool::analyze {

inline constexpr std::uint64_t kScanLines = 5000;  // replayed.py SCAN_LINES

class RequestReplay {
 public:
  // name: the log's, for the replay log's header.
  explicit RequestReplay(const std::string& name);
  ~RequestReplay();
  RequestReplay(const RequestReplay&) = delete;
  RequestReplay& operator=(const RequestReplay&) = delete;

  void feed(std::uint64_t line_number, std::string_view line) { replayer_->feed(line_number, line); }
  void feed_too_long(std::uint64_t line_number) { replayer_->feed_too_long(line_number); }
  // The log's end: the replay finishes, its log is closed and read to its end.
  void finish();

  const LogAnalysis& analysis() const { return analysis_; }
  // Given each event of the replay's log (an export that follows it: event_hook.h).
  void hook(EventHook* h) { analysis_.hook = h; }
  const Report& report() const { return report_; }

 private:
  static ssize_t write(void* cookie, const char* data, std::size_t size);
  static int close(void* cookie);
  void take(std::string_view bytes);

  replay::PoolLogWriter writer_;
  std::unique_ptr<replay::Replayer> replayer_;
  LogAnalysis analysis_{AnalysisOptions{false, false}};
  Report report_;
  std::string carry_;
  std::uint64_t lines_ = 0;
  LastLine last_;
};

}  // namespace cudapool::analyze
