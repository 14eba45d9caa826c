// tools/analyze/ending.h: how a log ends, as far as the log tells (docs/log-format.md, "The
// summary" and "Guarantees"; tests/oracle/ending.py): with its summary line (the
// process exited normally); with a summary line longer than the readers' limit (it exited
// normally, the line cannot be read); or without one, which a kill, a crash or a log cut short
// all leave, with what the log does tell: its last line cut in the middle, seq gaps. Not here:
// finding the last line (input_tap.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/analyze/input_tap.h"

namespace cudapool::analyze {

struct Ending {
  std::string summary;  // "read", "too long" or "none"
  std::optional<std::uint64_t> line;
  std::vector<std::string> clues;
  std::string text;
};

struct SeqGaps {
  std::uint64_t count = 0;
  std::uint64_t line = 0, before = 0, after = 0;  // the first
};

// lines: the log's lines; summary_line: the summary's, when one was read; cut: "" or what to say
// of a compressed log that ended in the middle of a frame (log/read/input.h), the first clue.
Ending ending(const LastLine& last, std::uint64_t lines, std::optional<std::uint64_t> summary_line,
              const SeqGaps& gaps, const std::string& cut = "");

}  // namespace cudapool::analyze
