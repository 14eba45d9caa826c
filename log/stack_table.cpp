// SPDX-License-Identifier: Apache-2.0
// log/stack_table.cpp: see stack_table.h.
#include "log/stack_table.h"

#include <algorithm>
#include <cstring>

namespace cudapool::log {

namespace {

// At most max bytes, never ending inside a UTF-8 sequence.
std::string_view cut(std::string_view s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

std::uint32_t StackTable::add_frame(std::string_view file, std::string_view function,
                                    std::uint32_t line) {
  PythonFrame f;
  f.file = cut(file, kMaxFrameFile);
  f.function = cut(function, kMaxFrameFunction);
  f.line = line;
  std::lock_guard<std::mutex> lock(mutex_);
  frames_.push_back(std::move(f));
  return static_cast<std::uint32_t>(frames_.size());
}

std::uint32_t StackTable::intern_stack(const std::uint32_t* frames, std::size_t count) {
  count = std::min(count, kMaxPythonFrames);
  std::string key(count * sizeof(std::uint32_t), '\0');
  if (count > 0) std::memcpy(key.data(), frames, key.size());
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = stack_ids_.find(key);
  if (found != stack_ids_.end()) return found->second;
  stacks_.push_back(key);
  const auto id = static_cast<std::uint32_t>(stacks_.size());
  stack_ids_.emplace(std::move(key), id);
  return id;
}

std::vector<std::uint32_t> StackTable::stack(std::uint32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::uint32_t> out;
  if (id == 0 || id > stacks_.size()) return out;
  const std::string& bytes = stacks_[id - 1];
  out.resize(bytes.size() / sizeof(std::uint32_t));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

bool StackTable::frame(std::uint32_t id, PythonFrame* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id == 0 || id > frames_.size()) return false;
  *out = frames_[id - 1];
  return true;
}

std::size_t StackTable::frames() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return frames_.size();
}

std::size_t StackTable::stacks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stacks_.size();
}

}  // namespace cudapool::log
