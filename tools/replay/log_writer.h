// SPDX-License-Identifier: Apache-2.0
// tools/replay/log_writer.h: `cudapool-replay --write-log OUT`: the pool's decisions during a
// replay written as a cudapool.log/1 file (docs/log-format.md, "Written by the replay"), so that a
// log of requests alone (alloc and free, no segments) can be read by every tool that draws
// segments and blocks. Each pool event gets the time, thread and context of the log event that
// caused it and a fresh seq; pointers are the simulation's. The events can go, unformatted, to a
// RecordSink instead of a file (cudapool-analyze reads them as records in the same process). Not
// here: the replay (replayer.h) and the line format (log/format.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "log/format.h"
#include "pool/events.h"
#include "tools/replay/log_event.h"

namespace cudapool::replay {

// Where the written log goes instead of a file: the header and summary lines as text (each with
// its newline), every event as its record, seq, time, thread and context filled (never formatted).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void line(std::string_view text) = 0;
  virtual void record(const log::LogRecord& record) = 0;
};

class PoolLogWriter : public pool::EventSink {
 public:
  PoolLogWriter() = default;
  ~PoolLogWriter() override;
  PoolLogWriter(const PoolLogWriter&) = delete;
  PoolLogWriter& operator=(const PoolLogWriter&) = delete;

  // Creates path (replacing what is there); false with *error set when it cannot be created.
  bool open(const std::string& path, std::string* error);
  // Writes to a stream the caller made instead (cudapool-analyze reads the replay's decisions as
  // they are written, in the same process): closed by close() or discard(), never removed.
  void attach(std::FILE* file, const std::string& name);
  // Hands the lines and records to sink (not owned) instead: close() and discard() detach it.
  void attach(RecordSink* sink);
  // The header line, once, when the replay's settings are known (before its first event).
  void start(const log::HeaderInfo& header);
  bool started() const { return started_; }
  // The log event being replayed: the pool events it causes carry its time, thread and context.
  void at(const LogEvent& source) {
    t_ns_ = source.t_ns;
    tid_ = source.tid;
    ctx_ = source.ctx;
  }
  std::uint64_t on_pool_event(const pool::PoolEvent& event) override;
  // Writes the summary line and closes the file; false with *error set when a write failed (a
  // regular file is then removed: never a log that looks whole and is not).
  bool close(log::Summary summary, std::string* error);
  // Closes the file without a summary and removes it when it is a regular file (the input held
  // no log: nothing was replayed).
  void discard();
  std::uint64_t events() const { return seq_; }

 private:
  void write(const char* data, std::size_t bytes);

  std::FILE* file_ = nullptr;
  RecordSink* sink_ = nullptr;
  std::string path_;
  bool failed_ = false, started_ = false;
  bool regular_ = false;  // a regular file: removed when a write failed (never /dev/full)
  int errno_ = 0;
  std::uint64_t seq_ = 0, t_ns_ = 0, tid_ = 0;
  int ctx_ = 0;
};

}  // namespace cudapool::replay
