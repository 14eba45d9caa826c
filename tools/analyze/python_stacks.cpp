// SPDX-License-Identifier: Apache-2.0
// tools/analyze/python_stacks.cpp: see python_stacks.h.
#include "tools/analyze/python_stacks.h"

#include "tools/analyze/json_value.h"

namespace cudapool::analyze {

namespace {

constexpr std::size_t kLongPath = 60;  // characters: a longer path is shortened
constexpr std::size_t kPathTail = 3;   // components kept of a shortened path

bool digits_at(const std::string& s, std::size_t& i) {
  const std::size_t start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i > start;
}

// Whether path holds "/lib/pythonX.Y/".
bool in_stdlib(const std::string& path) {
  constexpr std::string_view kLib = "/lib/python";
  for (std::size_t at = path.find(kLib); at != std::string::npos; at = path.find(kLib, at + 1)) {
    std::size_t i = at + kLib.size();
    if (digits_at(path, i) && i < path.size() && path[i] == '.' && digits_at(path, ++i) &&
        i < path.size() && path[i] == '/') {
      return true;
    }
  }
  return false;
}

std::string short_path(const std::string& path) {
  if (char_count(path) <= kLongPath) return path;
  std::size_t cut = path.size();
  for (std::size_t k = 0; k < kPathTail; ++k) {
    const std::size_t slash = cut == 0 ? std::string::npos : path.rfind('/', cut - 1);
    if (slash == std::string::npos || slash == 0) return path;
    cut = slash;
  }
  return "..." + path.substr(cut);
}

}  // namespace

std::string PythonStacks::define(const replay::DefinitionLine& d) {
  const bool frame = d.kind == replay::DefinitionKind::kFrame;
  if (frame ? frame_ids_.count(d.id) != 0 : stack_ids_.count(d.id) != 0) {
    return replay::second_definition(d.kind, d.id);
  }
  if (frame) {
    if (frames_.size() >= kMaxPythonFrames) return ++dropped_, "";
    frames_.push_back(PythonFrame{d.file, d.function, d.line, true});
    frame_ids_.emplace(d.id, &frames_.back());
    return "";
  }
  if (stacks_.size() >= kMaxPythonStacks) return ++dropped_, "";
  PythonStack s;
  s.index = static_cast<std::uint32_t>(stacks_.size());
  s.frames.reserve(d.frames.size());
  for (const std::uint64_t id : d.frames) {
    const auto it = frame_ids_.find(id);
    s.frames.push_back(it == frame_ids_.end() ? &unknown_ : it->second);
  }
  stacks_.push_back(std::move(s));
  stack_ids_.emplace(d.id, &stacks_.back());
  return "";
}

const PythonStack* PythonStacks::stack(std::uint64_t id) const {
  const auto it = stack_ids_.find(id);
  return it == stack_ids_.end() ? nullptr : it->second;
}

std::string python_frame_text(const PythonFrame& f) {
  if (!f.known) return "?";
  return short_path(f.file) + ":" + std::to_string(f.line) + " " + f.function;
}

bool user_frame(const PythonFrame& f) {
  if (!f.known) return false;
  if (!f.file.empty() && f.file.front() == '<') return false;
  return f.file.find("/site-packages/") == std::string::npos &&
         f.file.find("/dist-packages/") == std::string::npos && !in_stdlib(f.file);
}

std::size_t python_focus(const PythonStack& s) {
  for (std::size_t i = 0; i < s.frames.size(); ++i) {
    if (user_frame(*s.frames[i])) return i;
  }
  return 0;
}

}  // namespace cudapool::analyze
