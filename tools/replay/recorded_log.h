// tools/replay/recorded_log.h: a cudapool.log/1 file read once into memory, in the compact form a
// replay needs (the header, and the events the pool acts on, each with its line number), so that
// cudapool tune can replay one log under many settings without parsing it again. What could not
// be read is counted and located as a streaming replay would (Replayer::replay reports it). Not
// here: the replay itself (replayer.h).
#pragma once

#include <cstdint>
#include <fstream>
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

// Opens and reads path ("-": standard input). false with *error set when it cannot be read (no
// such file, a directory, permission).
bool read_log_file(const std::string& path, RecordedLog* log, std::string* error);

// Opens path for reading a log: false with *error set ("PATH is a directory, not a log", "PATH:
// No such file or directory", ...) when it cannot be. Character devices and pipes are read as
// they come (/dev/null is an empty log, /dev/zero an endless line).
bool open_log_stream(const std::string& path, std::ifstream& in, std::string* error);

// What to say of an input none of whose lines is a header, an event or the summary (name:
// "<stdin>" for -; first: its first problem, when known), as cudapool report words it.
std::string not_a_log(const std::string& name, std::uint64_t lines, const std::string& first);

}  // namespace cudapool::replay
