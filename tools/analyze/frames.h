// SPDX-License-Identifier: Apache-2.0
// tools/analyze/frames.h: readable names for the frames of a log's backtraces, the rule of
// scripts/cudapool_analysis/frames.py (one rule for the page and the memory_viz export). alloc
// events carry bare return addresses ("0x7f6d5f8146f3"); the summary line carries the loaded
// objects' address ranges (modules) and its leaks' frames symbolized at exit. A frame is named by,
// in this order:
//   the module's own file, when the module holding the address has the log's build id and the file
//   at its path has that build id too (symbolizer.h, libdw; cudapool-analyze --no-symbols: never):
//   "0x7f6d5f8146f3 libfoo.so(do_alloc(int)+0x13) at foo.cpp:42" (the function demangled, the
//   offset of the return address, the source file's base name and line where the file has line
//   tables; without a symbol there "0x7f6d5f8146f3 libfoo.so+0x146f3 at foo.cpp:42");
//   a symbol (its own text, else a leak's frame of the same address: "0x7f33aa0101c0
//   libtorch_cuda.so(forward+0x1c)");
//   the module holding the address ("0x7f6d5f8146f3 libcudart.so.13+0x146f3");
//   the file and offset its text names; else the bare address.
// Cut at kMaxFrameText characters. The Python twin names memory_viz frames with the same symbols
// (memviz_write.cpp hands them over). Not here: which frame names a site (sites.h), reading the
// files (symbolizer.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/analyze/json_value.h"
#include "tools/analyze/symbolizer.h"

namespace cudapool::analyze {

inline constexpr std::size_t kMaxFrameText = 300;

class Frames {
 public:
  // From a checked summary line (line_checks.h), or none.
  explicit Frames(const JsonValue* summary);
  // The page's text of a frame.
  std::string text(const std::string& frame) const;
  // What the module's own file says of a frame's address (the first rule above), or nullopt.
  std::optional<NativeSymbol> symbol(const std::string& frame) const;

 private:
  struct Module {
    std::uint64_t base, end;
    ModuleFile file;
  };
  // The module holding an address, or null.
  const Module* module(std::uint64_t address) const;

  std::vector<Module> modules_;  // sorted by base
  std::unordered_map<std::uint64_t, std::pair<std::string, std::string>> symbols_;
};

}  // namespace cudapool::analyze
