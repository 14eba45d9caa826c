// SPDX-License-Identifier: Apache-2.0
// tools/analyze/backtraces.h: the backtraces of the blocks alive, each distinct one kept once by
// its JSON text with a count of the blocks that hold it, and gone when the last one goes, so that
// the leaks of a log without a summary line carry their stacks at no cost beyond the live state.
// Not here: allocation sites (sites.h: frames counted over the whole log, bounded).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cudapool::analyze {

class BacktraceTable {
 public:
  // The id of a backtrace's JSON text (a list), held once more; never 0.
  std::uint32_t hold(std::string_view text);
  void release(std::uint32_t id);
  const std::string& text(std::uint32_t id) const { return entries_[id - 1].text; }
  std::size_t size() const { return ids_.size(); }

 private:
  struct Entry {
    std::string text;
    std::uint64_t holders = 0;
  };
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;
};

}  // namespace cudapool::analyze
