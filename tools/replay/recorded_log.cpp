// tools/replay/recorded_log.cpp: see recorded_log.h.
#include "tools/replay/recorded_log.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "tools/replay/line_reader.h"

namespace cudapool::replay {

namespace {

constexpr std::size_t kMaxProblems = 100;

void add_line(RecordedLog& log, std::uint64_t number, std::string_view line) {
  ++log.lines;
  ParsedLine parsed = parse_log_line(line, &log.header);
  auto problem = [&](std::string what) {
    if (log.problems.size() < kMaxProblems) log.problems.push_back({number, std::move(what)});
  };
  switch (parsed.kind) {
    case LineKind::kBlank:
      ++log.blank_lines;
      return;
    case LineKind::kHeader:
      ++log.other_lines;
      if (!log.events.empty()) problem("a second header after events: ignored");
      log.has_header = true;
      return;
    case LineKind::kMalformed:
      ++log.malformed_lines;
      problem("malformed line: " + parsed.problem);
      return;
    case LineKind::kEvent:
      if (parsed.event.kind == EventKind::kOther) {
        ++log.other_lines;
        return;
      }
      if (parsed.event.kind == EventKind::kAlloc) {
        ++log.allocs;
        if (parsed.event.size > log.largest_request) log.largest_request = parsed.event.size;
      }
      log.events.push_back(RecordedEvent{number, parsed.event});
      return;
  }
}

}  // namespace

RecordedLog read_log(std::istream& in) {
  RecordedLog log;
  for_each_line(in,
                [&](std::uint64_t number, std::string_view line) { add_line(log, number, line); });
  return log;
}

bool read_log_file(const std::string& path, RecordedLog* log, std::string* error) {
  if (path == "-") {
    *log = read_log(std::cin);
    return true;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = path + ": is a directory, not a log";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  *log = read_log(in);
  return true;
}

}  // namespace cudapool::replay
