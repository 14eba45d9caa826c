// SPDX-License-Identifier: Apache-2.0
// log/stack_table.h: the interned Python stacks of one log (CUDAPOOL_BACKTRACE=python,
// docs/log-format.md "Python stacks"): frames (file, line, function) and stacks (lists of frame
// ids, innermost first), each numbered 1, 2, 3, ... in order of first use. The shim adds to it
// while taking stacks; the logger's writer thread reads a stack's frames when it first writes an
// event that names it, and writes the definition lines (python_frame, python_stack) before that
// event, once each. Thread-safe (one mutex: the shim adds under the GIL, the writer reads rarely);
// nothing is ever removed. Not here: reading Python (shim/recording/python_stack.cpp), keeping the
// code objects alive, the lines' text (format_stack_lines in format_lines.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cudapool::log {

inline constexpr std::size_t kMaxPythonFrames = 256;   // per stack (CUDAPOOL_BACKTRACE=python:N)
inline constexpr std::size_t kMaxFrameFile = 512;      // bytes of a frame's file kept
inline constexpr std::size_t kMaxFrameFunction = 256;  // bytes of a frame's function kept

struct PythonFrame {
  std::string file, function;
  std::uint32_t line = 0;
};

class StackTable {
 public:
  // A new frame's id (the caller keeps its own map from what it saw to ids: the shim's is keyed by
  // code object and line). file and function are cut to kMaxFrameFile and kMaxFrameFunction bytes.
  std::uint32_t add_frame(std::string_view file, std::string_view function, std::uint32_t line);
  // The id of the stack of these frame ids (at most kMaxPythonFrames used), new or as before.
  std::uint32_t intern_stack(const std::uint32_t* frames, std::size_t count);

  // The writer's side. Copies of stack `id`'s frame ids (empty for an unknown id) and of frame
  // `id` (false for an unknown id).
  std::vector<std::uint32_t> stack(std::uint32_t id) const;
  bool frame(std::uint32_t id, PythonFrame* out) const;

  std::size_t frames() const;
  std::size_t stacks() const;

 private:
  mutable std::mutex mutex_;
  std::vector<PythonFrame> frames_;  // id - 1
  std::vector<std::string> stacks_;  // id - 1: the frame ids' bytes
  std::unordered_map<std::string, std::uint32_t> stack_ids_;
};

}  // namespace cudapool::log
