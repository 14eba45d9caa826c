// SPDX-License-Identifier: Apache-2.0
// tools/analyze/line_verdict.h: why a line of a log is not one valid JSON object, in the words
// of the Python reader (tests/oracle/reader.py parse_line, which quotes Python's json
// module): "not valid UTF-8 (byte 81)", "not JSON (Expecting ',' delimiter: line 1 column 75
// (char 74))", "not a JSON object", "a string with a lone surrogate escape", "nested more than 64
// levels deep". The engine asks only about a line tools/replay/flat_json.h's scanner refused (the
// scanner is the fast check of the same rule, docs/log-format.md "Valid lines"); this file finds
// the first fault in the order Python's decoder meets it, with its position in characters. Not
// here: the fields of an event (log_line.h).
#pragma once

#include <string>
#include <string_view>

namespace cudapool::analyze {

// The depth at which Python's decoder gives up with a RecursionError (its recursion limit, less
// the frames of the report that calls it): deeper lines are "not JSON (nested too deeply)".
inline constexpr int kPythonMaxDepth = 986;

enum class Verdict : unsigned char { kObject, kBlank, kMalformed };

struct LineVerdict {
  Verdict verdict = Verdict::kObject;
  std::string why;  // for kMalformed, without the "malformed: " the report puts before it
  // The fault's place is the line's end or past it: its text depends on the newline after it.
  bool at_end = false;
};

// line: without its newline; has_newline: whether the file has one after it (Python's decoder
// sees it, and a position past the line's end counts it).
LineVerdict judge_line(std::string_view line, bool has_newline);

// The index of the first byte of line that is not valid UTF-8 (Python's strict decoder: no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos.
std::size_t invalid_utf8_at(std::string_view line);

}  // namespace cudapool::analyze
