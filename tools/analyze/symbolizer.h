// SPDX-License-Identifier: Apache-2.0
// tools/analyze/symbolizer.h: names a native frame's return address from the loaded object's own
// file, at report time, with elfutils' libdw (dwfl): the function (demangled with
// abi::__cxa_demangle) and its offset, and the source file and line where the file (or its
// separate debug file under /usr/lib/debug) has line tables. A module of the summary line
// (docs/log-format.md, `modules`) is read only when its `build_id` is given and equals the GNU
// build id of the file now at its `path`, and that file is a regular file (stat first, never procfs
// or sysfs; opened without blocking); anything else (no build id in the log, a missing, replaced,
// corrupt or hostile file) is "not symbolized" and the caller names the frame as before (library +
// offset, frames.h). The lookup is of the return address less 1 (a return address points after
// its call); the offset is the return address's. Names are cut to printable ASCII.
//
// One process-wide symbolizer, bounded: at most kMaxOpenModules files open (then all are closed
// and reopened as asked), at most kMaxCachedAddresses addresses remembered (then forgotten);
// locked, so any thread may ask. Every libdw session ends (dwfl_end) when its file is dropped and
// at exit. Built without libdw (CMake did not find it), nothing is symbolized. The test oracle's
// independent twin is tests/oracle/symbols.py (eu-addr2line). Not here: a frame's text (frames.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cudapool::analyze {

inline constexpr std::size_t kMaxOpenModules = 64;
inline constexpr std::size_t kMaxCachedAddresses = std::size_t{1} << 16;
inline constexpr std::size_t kMaxSymbolText = 1024;  // function and file names are cut here

// A module of the summary line, as a symbolizer needs it.
struct ModuleFile {
  std::string path;
  std::uint64_t bias = 0;  // dlpi_addr: a loaded address less bias is the file's address
  std::string build_id;    // lower-case hex; empty: the log has none (never symbolized)
};

// What the file says of a return address: function empty when no symbol holds it, file empty
// (line 0) when no line table does; never both empty.
struct NativeSymbol {
  std::string function;
  std::uint64_t offset = 0;  // of the return address from the function's start
  std::string file;          // as the line table names it, absolute when it knows the directory
  std::uint32_t line = 0;
};

// Whether frames are symbolized: on by default; cudapool-analyze --no-symbols turns it off.
void set_symbolizing(bool on);
bool symbolizing();
// Whether this build can symbolize at all (built with libdw).
bool symbolizer_built();

// The name of return address `address` (a loaded address) inside module m, or nullopt: not
// symbolizing, no build id, no such regular file, another build, no symbol nor line there.
std::optional<NativeSymbol> symbolize(const ModuleFile& m, std::uint64_t address);

}  // namespace cudapool::analyze
