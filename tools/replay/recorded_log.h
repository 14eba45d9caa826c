// SPDX-License-Identifier: Apache-2.0
// tools/replay/recorded_log.h: a cudapool.log/1 file decoded once, in the compact form a replay
// needs: the events the pool acts on, each with its line number, handed out in batches
// (LogDecoder: cudapool tune feeds each batch to every setting's pool, so its memory is bounded by
// a batch, never by the log's length) or all at once (read_log: a RecordedLog, for tests); and
// what the lines say besides (LogTally: the header, the counts of lines, the first problems, the
// number of allocations and the largest). What could not be read is counted and located as a
// streaming replay would (Replayer::replay_batch reports it). Not here: the replay itself
// (replayer.h), opening a log (log/read/input.h).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "log/read/line_reader.h"
#include "tools/replay/log_event.h"

namespace cudapool::replay {

// The problems a replay keeps (and the decoder reports), the first ones of a log in line order.
inline constexpr std::size_t kMaxProblemsKept = 100;

struct Problem {
  std::uint64_t line;
  std::string what;
};

struct RecordedEvent {
  std::uint64_t line = 0;
  LogEvent event;
};

// What a log's lines say besides its events; final once the decoder has read the whole log.
struct LogTally {
  LogHeader header;  // the first header before any event line: final once an event line is read
  bool has_header = false;
  std::uint64_t lines = 0;
  std::uint64_t other_lines = 0;       // events of other actions, the header, the summary
  std::uint64_t definition_lines = 0;  // Python stacks' definition lines (in other_lines too)
  std::uint64_t blank_lines = 0;
  std::uint64_t malformed_lines = 0;
  std::vector<Problem> problems;      // the first kMaxProblemsKept, in line order
  std::uint64_t event_count = 0;      // the events recorded (RecordedEvent)
  std::uint64_t allocs = 0;           // alloc events
  std::uint64_t largest_request = 0;  // the largest alloc size, bytes
};

// Consecutive events of a log (alloc, free_requested, free_completed, oom, empty_cache,
// segment_alloc, segment_refused, pool-other and context_dropped, in order), with the problems of
// the lines read with them (those among the log's first kMaxProblemsKept).
struct EventBatch {
  std::vector<RecordedEvent> events;
  std::vector<Problem> problems;
};

class LogDecoder {
 public:
  explicit LogDecoder(std::istream& in) : reader_(in) {}

  // Reads up to the first event line (of any action) or the end of the input: the header is final
  // then (a later one is ignored). What it read goes into the next batch.
  void read_header();
  // The next at most max_events events into *batch (replacing what it held), with the problems of
  // the lines read. false once the input has ended and nothing is left; the tally is then final.
  bool next_batch(EventBatch* batch, std::size_t max_events);
  const LogTally& tally() const { return tally_; }

 private:
  void add_line(std::uint64_t number, std::string_view line, EventBatch& batch);
  void add_problem(EventBatch& batch, std::uint64_t number, std::string what);
  bool read_line(EventBatch& batch);  // false at the end of the input

  cudapool::log::LineReader reader_;
  LogTally tally_;
  bool event_seen_ = false;  // an event line (any action) or the summary: a later header is ignored
  DefinedIds defined_;       // the ids of Python frames and stacks defined: a second one is listed
  bool ended_ = false;
  EventBatch pending_;  // read by read_header(), not handed out yet
};

// A whole log in memory (tests: the same events and tally as the decoder's batches).
struct RecordedLog : LogTally {
  std::vector<RecordedEvent> events;
};

// Reads a whole stream. Never fails: a stream that holds no log gives a RecordedLog without
// header or events.
RecordedLog read_log(std::istream& in);

// What to say of an input none of whose lines is a header, an event or the summary (name:
// "<stdin>" for -; first: its first problem, when known), as cudapool report words it.
std::string not_a_log(const std::string& name, std::uint64_t lines, const std::string& first);

}  // namespace cudapool::replay
