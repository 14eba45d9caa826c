// SPDX-License-Identifier: Apache-2.0
// tools/analyze/sites.h: allocation sites for the page, the rule of
// tests/oracle/sites.py: each distinct stack (the first kMaxFrames frames of an
// alloc event's backtrace, when they are all strings) is one site, numbered in the order first
// seen; an alloc event with a Python stack (python_stacks.h) has the site of that stack instead
// (its native frames are not looked at); the allocations and bytes of each are counted over the
// log. The table is bounded: past kMaxSites distinct stacks a new one is no site (counted, and said
// in the page's notes), where the Python side kept every one. focus() picks the frame that names a
// site. Not here: naming a frame (frames.h), the bytes held at the peak (device_layout.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tools/analyze/figure.h"
#include "tools/analyze/python_stacks.h"

namespace cudapool::analyze {

inline constexpr std::size_t kMaxFrames = 16;  // the writer's limit (CUDAPOOL_BACKTRACE 0..16)
inline constexpr std::size_t kMaxSites = 1 << 16;
inline constexpr std::size_t kTopSites = 25;

class Sites {
 public:
  // The site of an alloc event's backtrace (its JSON text), -1 when it is none: empty, not a
  // list, a frame among the first kMaxFrames that is not a string, or the table full.
  std::int32_t site(std::string_view backtrace_json);
  // The site of an alloc event's Python stack, -1 when the table is full.
  std::int32_t python_site(const PythonStack& stack);
  void count(std::int32_t site, std::uint64_t block_size);

  std::size_t size() const { return frames_.size(); }
  // A native site's frames (empty for a Python site).
  const std::vector<std::string>& frames(std::int32_t site) const { return frames_[site]; }
  // A Python site's stack, null for a native one.
  const PythonStack* python(std::int32_t site) const { return python_[site]; }
  std::uint64_t allocs(std::int32_t site) const { return counts_[site].first; }
  Figure bytes(std::int32_t site) const { return counts_[site].second; }
  std::uint64_t stacks_over_limit() const { return over_; }

 private:
  std::unordered_map<std::string, std::int32_t> ids_;
  std::vector<std::vector<std::string>> frames_;
  std::vector<const PythonStack*> python_;
  std::unordered_map<std::uint32_t, std::int32_t> python_ids_;  // stack index -> site
  std::vector<std::pair<std::uint64_t, Figure>> counts_;
  std::uint64_t over_ = 0;
};

// The index of the frame that names a site among its texts (sites.py focus()): the first one
// outside the CUDA runtime and the allocators that names a library, else the first bare address
// outside them, else 0.
std::size_t focus(const std::vector<std::string>& texts);

// Whether site x comes before site y in a list of sites: Python sites before native ones, then by
// the key (more first), then by number; a site -1 (none) is a native one.
bool site_before(const Sites& sites, std::int32_t x, std::int32_t y, Figure key_x, Figure key_y);

}  // namespace cudapool::analyze
