// SPDX-License-Identifier: Apache-2.0
// tools/analyze/backtraces.cpp: see backtraces.h.
#include "tools/analyze/backtraces.h"

namespace cudapool::analyze {

std::uint32_t BacktraceTable::hold(std::string_view text) {
  std::string key(text);
  const auto it = ids_.find(key);
  if (it != ids_.end()) {
    ++entries_[it->second - 1].holders;
    return it->second;
  }
  std::uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    entries_.emplace_back();
    id = static_cast<std::uint32_t>(entries_.size());
  }
  entries_[id - 1] = Entry{key, 1};
  ids_.emplace(std::move(key), id);
  return id;
}

void BacktraceTable::release(std::uint32_t id) {
  if (id == 0) return;
  Entry& e = entries_[id - 1];
  if (--e.holders != 0) return;
  ids_.erase(e.text);
  e.text = std::string();
  free_.push_back(id);
}

}  // namespace cudapool::analyze
