// SPDX-License-Identifier: Apache-2.0
// tools/replay/definition_line.h: the definition lines of Python stacks
// (CUDAPOOL_BACKTRACE=python; docs/log-format.md "Python stacks" and "Valid lines"), read and
// checked once for both C++ readers of the log: `python_frame` (id, file, line, function) and
// `python_stack` (id, frames: frame ids, innermost first). A definition line is not an event:
// no reader counts or replays it. Malformed when its id is not an unsigned integer from 1, a
// frame's file or function is not a string or its line not an unsigned integer, a stack's frames
// not a list of unsigned integers from 1; the words are tests/oracle/reader.py's. Not here:
// keeping the table of a log (the engine: tools/analyze/python_stacks.h; the replay records only
// which ids were defined, to list a second definition), the event lines (log_event.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace cudapool::replay {

enum class DefinitionKind : std::uint8_t { kNone, kFrame, kStack };

// The kind of definition line an action names (kNone: not one).
DefinitionKind definition_kind(std::string_view action);

struct DefinitionLine {
  DefinitionKind kind = DefinitionKind::kNone;
  std::string why;  // not empty: the line is malformed, and why (without "malformed: ")
  std::uint64_t id = 0;
  // kFrame
  std::string file, function;
  std::uint64_t line = 0;
  // kStack: frame ids, innermost first
  std::vector<std::uint64_t> frames;
};

// The problem of a second definition of an id, which a reader lists and ignores: "a second
// python_frame 7: ignored".
std::string second_definition(DefinitionKind kind, std::uint64_t id);

// The ids a log's definition lines defined, of frames and of stacks: whether a definition is the
// first of its id (the replay's record; the engine keeps the whole table, analyze/python_stacks.h).
class DefinedIds {
 public:
  bool first(DefinitionKind kind, std::uint64_t id) {
    return (kind == DefinitionKind::kFrame ? frames_ : stacks_).insert(id).second;
  }

 private:
  std::unordered_set<std::uint64_t> frames_, stacks_;
};

// Reads a line that scan_flat_object() took whole (one strict JSON object) and whose action is
// kind's.
DefinitionLine read_definition_line(std::string_view text, DefinitionKind kind);

}  // namespace cudapool::replay
