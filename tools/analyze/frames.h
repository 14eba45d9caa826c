// tools/analyze/frames.h: readable names for the frames of a log's backtraces, the rule of
// scripts/cudapool_analysis/frames.py (one rule for the page and the memory_viz export). alloc
// events carry bare return addresses ("0x7f6d5f8146f3"); the summary line carries the loaded
// objects' address ranges (modules) and its leaks' frames symbolized at exit. A frame is named by,
// in this order: a symbol (its own text, else a leak's frame of the same address), the module
// holding the address ("0x7f6d5f8146f3 libcudart.so.13+0x146f3"), the file and offset its text
// names, else the bare address; cut at kMaxFrameText characters. Not here: which frame names a
// site (sites.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tools/analyze/json_value.h"

namespace cudapool::analyze {

inline constexpr std::size_t kMaxFrameText = 300;

class Frames {
 public:
  // From a checked summary line (line_checks.h), or none.
  explicit Frames(const JsonValue* summary);
  // The page's text of a frame.
  std::string text(const std::string& frame) const;

 private:
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> modules_;  // sorted
  std::unordered_map<std::uint64_t, std::pair<std::string, std::string>> symbols_;
};

}  // namespace cudapool::analyze
