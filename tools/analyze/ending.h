// SPDX-License-Identifier: Apache-2.0
// tools/analyze/ending.h: how a log ends, as far as the log tells (docs/log-format.md, "The
// summary" and "Guarantees"; tests/oracle/ending.py): with its summary line (the
// process exited normally); with a summary line longer than the readers' limit (it exited
// normally, the line cannot be read); or without one, which a kill, a crash or a log cut short
// all leave, with what the log does tell: its last line cut in the middle, seq gaps; or without
// one because the log is one of requests only (no pool decisions: not the shim's, which ends its
// logs with a summary line), whose ending says nothing of how its process ended. Not here:
// finding the last line (input_tap.h), telling a log of requests only (analyze_log.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/analyze/input_tap.h"

namespace cudapool::analyze {

struct Ending {
  std::string summary;  // "read", "too long" or "none"
  // A log of requests only (no summary line by construction): whether it exited normally is
  // not known (exited_normally: null).
  bool requests_only = false;
  std::optional<std::uint64_t> line;
  std::vector<std::string> clues;
  std::string text;
};

struct SeqGaps {
  std::uint64_t count = 0;
  std::uint64_t line = 0, before = 0, after = 0;  // the first
};

// lines: the log's lines; summary_line: the summary's, when one was read; cut: "" or what to say
// of a compressed log that ended in the middle of a frame (log/read/input.h), the first clue;
// requests_only: the log holds requests only (allocs, no pool decision).
Ending ending(const LastLine& last, std::uint64_t lines, std::optional<std::uint64_t> summary_line,
              const SeqGaps& gaps, const std::string& cut = "", bool requests_only = false);

// The report's exited_normally: true, false, or unknown (a log of requests only without summary).
std::optional<bool> exited_normally(const Ending& e);

// The ending's text for a log of requests only without a summary line (ending.py).
inline constexpr const char* kRequestsOnlyEnding =
    "no summary line, as in every log of requests only (no pool decisions: not written by "
    "cudapool's shim, which ends its logs with one): how the process ended is not recorded";

}  // namespace cudapool::analyze
