// SPDX-License-Identifier: Apache-2.0
// tools/analyze/python_stacks.h: a log's Python frames and stacks (CUDAPOOL_BACKTRACE=python;
// docs/log-format.md "Python stacks"), as its definition lines give them: each id's first
// definition is kept and a second one is a problem, listed and ignored; a stack naming a frame not
// defined before it holds that frame as unknown; an alloc event whose python_stack names no stack
// defined before it has none. Memory is per log and grows with the distinct frames and stacks
// only, each bounded (past kMaxPythonFrames or kMaxPythonStacks, a definition is dropped and
// counted). Also how a Python frame is named on the page and which frame names a site: the first
// "user" frame, innermost first. The rule of tests/oracle/pystacks.py. Not here: reading the lines
// (tools/replay/definition_line.h), the sites (sites.h).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/replay/definition_line.h"

namespace cudapool::analyze {

inline constexpr std::size_t kMaxPythonFrames = std::size_t{1} << 20;
inline constexpr std::size_t kMaxPythonStacks = std::size_t{1} << 20;

struct PythonFrame {
  std::string file, function;
  std::uint64_t line = 0;
  bool known = true;  // false: a frame id no definition before its stack named
};

struct PythonStack {
  std::uint32_t index = 0;                 // in the order defined, from 0
  std::vector<const PythonFrame*> frames;  // innermost first
};

class PythonStacks {
 public:
  // A valid definition line: "" when taken, else the problem to list (a second definition).
  std::string define(const replay::DefinitionLine& d);
  // The stack of an alloc event's python_stack id, or null.
  const PythonStack* stack(std::uint64_t id) const;
  std::size_t frame_count() const { return frames_.size(); }
  std::size_t stack_count() const { return stacks_.size(); }
  std::uint64_t dropped() const { return dropped_; }

 private:
  std::unordered_map<std::uint64_t, const PythonFrame*> frame_ids_;
  std::unordered_map<std::uint64_t, const PythonStack*> stack_ids_;
  std::deque<PythonFrame> frames_;  // a deque: the pointers above stay valid
  std::deque<PythonStack> stacks_;
  PythonFrame unknown_{"?", "?", 0, false};
  std::uint64_t dropped_ = 0;
};

// A frame's text: "file:line function", a long path shortened to ".../" and its last three
// components; "?" for an unknown frame.
std::string python_frame_text(const PythonFrame& f);

// Whether a frame is the program's own: its file is not in Python's standard library or an
// installed package (a path holding /site-packages/, /dist-packages/ or /lib/pythonX.Y/), nor a
// pseudo-file ("<frozen runpy>", "<string>"), and the frame is known.
bool user_frame(const PythonFrame& f);

// The index of the frame that names a Python site: the first user frame, innermost first, else 0.
std::size_t python_focus(const PythonStack& s);

}  // namespace cudapool::analyze
