// tools/replay/recorded_log.h: a cudapool.log/1 file read once into memory, in the compact form a
// replay needs (the header, and the events the pool acts on, each with its line number), so that
// cudapool tune can replay one log under many settings without parsing it again. What could not
// be read is counted and located as a streaming replay would (Replayer::replay reports it). Not
// here: the replay itself (replayer.h).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "tools/replay/log_event.h"

namespace cudapool::replay {

struct RecordedEvent {
  std::uint64_t line = 0;
  LogEvent event;
};

struct RecordedLog {
  LogHeader header;
  bool has_header = false;
  std::vector<RecordedEvent> events;  // alloc, free_requested, free_completed, oom, empty_cache,
                                      // segment_alloc, pool-other and context_dropped, in order
  std::uint64_t lines = 0;
  std::uint64_t other_lines = 0;  // events of other actions, the header, the summary
  std::uint64_t blank_lines = 0;
  std::uint64_t malformed_lines = 0;
  struct Problem {
    std::uint64_t line;
    std::string what;
  };
  std::vector<Problem> problems;      // the first kMaxProblemsKept
  std::uint64_t largest_request = 0;  // the largest alloc size, bytes
  std::uint64_t allocs = 0;
};

// Reads a whole stream. Never fails: a stream that holds no log gives a RecordedLog without
// header or events.
RecordedLog read_log(std::istream& in);

// Opens and reads path ("-": standard input; plain, gzip or zstd: log/read/input.h). false with
// *error set when it cannot be read (no such file, a directory, another compressed format,
// corrupt compressed data). *ended_early, when given: "" or what to say of a compressed input
// that ended in the middle of a frame (read to the cut). progress: the progress line on a
// terminal while it is read.
bool read_log_file(const std::string& path, RecordedLog* log, std::string* error,
                   std::string* ended_early = nullptr, bool progress = false);

// What to say of an input none of whose lines is a header, an event or the summary (name:
// "<stdin>" for -; first: its first problem, when known), as cudapool report words it.
std::string not_a_log(const std::string& name, std::uint64_t lines, const std::string& first);

}  // namespace cudapool::replay
