// tools/replay/recorded_log.cpp: see recorded_log.h.
#include "tools/replay/recorded_log.h"

#include "log/read/input.h"
#include "log/read/line_reader.h"

namespace cudapool::replay {

namespace {

constexpr std::size_t kMaxProblems = 100;

void add_problem(RecordedLog& log, std::uint64_t number, std::string what) {
  if (log.problems.size() < kMaxProblems) log.problems.push_back({number, std::move(what)});
}

// As Replayer::feed() reads a line (replayer.cpp): the same counts and problems.
void add_line(RecordedLog& log, bool& event_seen, std::uint64_t number, std::string_view line) {
  ++log.lines;
  const bool header_ignored = log.has_header || event_seen;
  ParsedLine parsed = parse_log_line(line, header_ignored ? nullptr : &log.header);
  auto problem = [&](std::string what) { add_problem(log, number, std::move(what)); };
  switch (parsed.kind) {
    case LineKind::kBlank:
      ++log.blank_lines;
      return;
    case LineKind::kHeader:
      ++log.other_lines;
      if (log.has_header) {
        problem("a second header: ignored");
      } else if (event_seen) {
        problem("a header after events: ignored");
      }
      log.has_header = true;
      return;
    case LineKind::kMalformed:
      ++log.malformed_lines;
      problem("malformed line: " + parsed.problem);
      return;
    case LineKind::kEvent:
      event_seen = true;
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
  bool event_seen = false;
  cudapool::log::for_each_line(
      in,
      [&](std::uint64_t number, std::string_view line) { add_line(log, event_seen, number, line); },
      [&](std::uint64_t number) {
        ++log.lines;
        ++log.malformed_lines;
        add_problem(log, number, std::string("malformed line: ").append(too_long_problem()));
      });
  return log;
}

bool read_log_file(const std::string& path, RecordedLog* log, std::string* error,
                   std::string* ended_early, bool progress) {
  cudapool::log::InputOptions options;
  options.progress = progress;
  cudapool::log::LogInput input;
  if (!input.open(path, error, options)) return false;
  *log = read_log(input.stream());
  if (!input.error().empty()) {
    *error = input.error();
    return false;
  }
  if (ended_early != nullptr) *ended_early = input.ended_early();
  return true;
}

std::string not_a_log(const std::string& name, std::uint64_t lines, const std::string& first) {
  if (lines == 0) return name + " is empty: not a log (a log has a header line)";
  return name + " is not a cudapool log: none of its " + std::to_string(lines) +
         (lines == 1 ? " line is" : " lines is") + " a header, an event or a summary" +
         (first.empty() ? "" : " (" + first + ")");
}

}  // namespace cudapool::replay
