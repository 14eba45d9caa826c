// SPDX-License-Identifier: Apache-2.0
// tools/replay/recorded_log.cpp: see recorded_log.h.
#include "tools/replay/recorded_log.h"

#include <limits>

#include "log/read/line_reader.h"

namespace cudapool::replay {

void LogDecoder::add_problem(EventBatch& batch, std::uint64_t number, std::string what) {
  if (tally_.problems.size() >= kMaxProblemsKept) return;
  tally_.problems.push_back({number, what});
  batch.problems.push_back({number, std::move(what)});
}

// As Replayer::feed() reads a line (replayer.cpp): the same counts and problems.
void LogDecoder::add_line(std::uint64_t number, std::string_view line, EventBatch& batch) {
  LogTally& t = tally_;
  ++t.lines;
  const bool header_ignored = t.has_header || event_seen_;
  ParsedLine parsed = parse_log_line(line, header_ignored ? nullptr : &t.header);
  switch (parsed.kind) {
    case LineKind::kBlank:
      ++t.blank_lines;
      return;
    case LineKind::kHeader:
      ++t.other_lines;
      if (t.has_header) {
        add_problem(batch, number, "a second header: ignored");
      } else if (event_seen_) {
        add_problem(batch, number, "a header after events: ignored");
      }
      t.has_header = true;
      return;
    case LineKind::kMalformed:
      ++t.malformed_lines;
      add_problem(batch, number, "malformed line: " + parsed.problem);
      return;
    case LineKind::kDefinition:  // a Python stack's frame or stack: not an event
      ++t.other_lines;
      ++t.definition_lines;
      if (!defined_.first(parsed.definition, parsed.definition_id)) {
        add_problem(batch, number, second_definition(parsed.definition, parsed.definition_id));
      }
      return;
    case LineKind::kEvent:
      event_seen_ = true;
      if (parsed.event.kind == EventKind::kOther) {
        ++t.other_lines;
        return;
      }
      if (parsed.event.kind == EventKind::kAlloc) {
        ++t.allocs;
        if (parsed.event.size > t.largest_request) t.largest_request = parsed.event.size;
      }
      ++t.event_count;
      batch.events.push_back(RecordedEvent{number, parsed.event});
      return;
  }
}

bool LogDecoder::read_line(EventBatch& batch) {
  std::uint64_t number = 0;
  std::string_view line;
  switch (reader_.next(&number, &line)) {
    case cudapool::log::LineReader::Got::kLine:
      add_line(number, line, batch);
      return true;
    case cudapool::log::LineReader::Got::kTooLong:
      ++tally_.lines;
      ++tally_.malformed_lines;
      add_problem(batch, number, std::string("malformed line: ").append(too_long_problem()));
      return true;
    case cudapool::log::LineReader::Got::kEnd:
      break;
  }
  ended_ = true;
  return false;
}

void LogDecoder::read_header() {
  while (!event_seen_ && !ended_ && read_line(pending_)) {
  }
}

bool LogDecoder::next_batch(EventBatch* batch, std::size_t max_events) {
  batch->events.clear();
  batch->problems.clear();
  const bool had_pending = !pending_.events.empty() || !pending_.problems.empty();
  if (ended_ && !had_pending) return false;
  if (had_pending) std::swap(*batch, pending_);
  while (batch->events.size() < max_events && read_line(*batch)) {
  }
  return true;
}

RecordedLog read_log(std::istream& in) {
  RecordedLog log;
  LogDecoder decoder(in);
  EventBatch batch;
  while (decoder.next_batch(&batch, std::numeric_limits<std::size_t>::max())) {
    log.events.insert(log.events.end(), batch.events.begin(), batch.events.end());
  }
  static_cast<LogTally&>(log) = decoder.tally();
  return log;
}

std::string not_a_log(const std::string& name, std::uint64_t lines, const std::string& first) {
  if (lines == 0) return name + " is empty: not a log (a log has a header line)";
  return name + " is not a cudapool log: none of its " + std::to_string(lines) +
         (lines == 1 ? " line is" : " lines is") + " a header, an event or a summary" +
         (first.empty() ? "" : " (" + first + ")");
}

}  // namespace cudapool::replay
