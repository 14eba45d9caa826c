// SPDX-License-Identifier: Apache-2.0
// tools/analyze/ending.cpp: see ending.h.
#include "tools/analyze/ending.h"

#include <regex>

#include "log/read/line_reader.h"

namespace cudapool::analyze {

namespace {

// ending.py _SUMMARY: the summary's action in the first bytes of a line.
bool names_summary(const std::string& head) {
  static const std::regex summary(R"re("action"\s*:\s*"summary")re");
  return std::regex_search(head, summary);
}

}  // namespace

Ending ending(const LastLine& last, std::uint64_t lines, std::optional<std::uint64_t> summary_line,
              const SeqGaps& gaps, const std::string& cut, bool requests_only) {
  Ending e;
  if (!cut.empty()) e.clues.push_back(cut);
  if (summary_line) {
    e.summary = "read";
    e.line = summary_line;
    e.text =
        "summary line at line " + std::to_string(*summary_line) + ": the process exited normally";
    for (const std::string& c : e.clues) e.text += "; " + c;
    return e;
  }
  const std::string n = std::to_string(lines);
  if (!last.empty) {
    const bool summary = !last.head.empty() && last.head[0] == '{' && names_summary(last.head);
    if (summary && last.length > cudapool::log::kMaxLineBytes) {
      e.summary = "too long";
      e.line = lines;
      e.clues.clear();
      e.text = "the summary line (line " + n + ", " + std::to_string(last.length) +
               " bytes) is longer than the readers' limit of " +
               std::to_string(cudapool::log::kMaxLineBytes) +
               " bytes (64 MiB) and was skipped: the process exited normally, but the statistics "
               "and leaks below are what its events imply";
      return e;
    }
    if (!last.newline) {
      e.clues.push_back("the last line (line " + n + ") has no newline at its end: " +
                        (summary ? "a summary line" : "it was") + " cut short");
    } else if (summary) {
      e.clues.push_back("the last line (line " + n +
                        ") is a summary line that cannot be read (see the problems)");
    }
  }
  if (gaps.count != 0) {
    e.clues.push_back("seq jumps " + std::to_string(gaps.count) + " time(s), first at line " +
                      std::to_string(gaps.line) + " (seq " + std::to_string(gaps.after) +
                      " after " + std::to_string(gaps.before) + "): events were lost");
  }
  e.summary = "none";
  e.requests_only = requests_only;
  e.text = requests_only ? kRequestsOnlyEnding
                         : "no summary line: the process was killed, crashed or the log was cut "
                           "short";
  for (const std::string& c : e.clues) e.text += "; " + c;
  return e;
}

std::optional<bool> exited_normally(const Ending& e) {
  if (e.summary == "none" && e.requests_only) return std::nullopt;
  return e.summary != "none";
}

}  // namespace cudapool::analyze
