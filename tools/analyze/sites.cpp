// SPDX-License-Identifier: Apache-2.0
// tools/analyze/sites.cpp: see sites.h.
#include "tools/analyze/sites.h"

#include "tools/replay/flat_json.h"

namespace cudapool::analyze {

namespace {

// Frames of the CUDA runtime and driver, of cudapool, and of PyTorch's allocator (c10).
constexpr const char* kRuntimeLibraries[] = {"libcudart", "libcuda.so", "libcudapool",
                                             "libc10_cuda", "libc10.so"};

bool space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// The first kMaxFrames elements of a JSON array text when they are all strings (decoded);
// false when it is not an array, is empty, or one of them is not a string.
bool string_frames(std::string_view s, std::vector<std::string>* out) {
  std::size_t i = 0;
  while (i < s.size() && space(s[i])) ++i;
  if (i >= s.size() || s[i] != '[') return false;
  ++i;
  while (out->size() < kMaxFrames) {
    while (i < s.size() && space(s[i])) ++i;
    if (i >= s.size() || s[i] == ']') break;
    if (s[i] != '"') return false;
    const std::size_t start = ++i;
    bool escaped = false;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') {
        escaped = true;
        ++i;
      }
      ++i;
    }
    const std::string_view raw = s.substr(start, i - start);
    out->push_back(escaped ? replay::decode_json_string(raw) : std::string(raw));
    ++i;
    while (i < s.size() && space(s[i])) ++i;
    if (i < s.size() && s[i] == ',') ++i;
  }
  return !out->empty();
}

}  // namespace

std::int32_t Sites::site(std::string_view backtrace_json) {
  std::vector<std::string> frames;
  if (!string_frames(backtrace_json, &frames)) return -1;
  std::string key;
  for (const std::string& f : frames) {
    key += std::to_string(f.size());
    key += ':';
    key += f;
  }
  const auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  if (frames_.size() >= kMaxSites) {
    ++over_;
    return -1;
  }
  const auto id = static_cast<std::int32_t>(frames_.size());
  ids_.emplace(std::move(key), id);
  frames_.push_back(std::move(frames));
  python_.push_back(nullptr);
  counts_.emplace_back(0, 0);
  return id;
}

std::int32_t Sites::python_site(const PythonStack& stack) {
  const auto it = python_ids_.find(stack.index);
  if (it != python_ids_.end()) return it->second;
  if (frames_.size() >= kMaxSites) {
    ++over_;
    return -1;
  }
  const auto id = static_cast<std::int32_t>(frames_.size());
  python_ids_.emplace(stack.index, id);
  frames_.emplace_back();
  python_.push_back(&stack);
  counts_.emplace_back(0, 0);
  return id;
}

bool site_before(const Sites& sites, std::int32_t x, std::int32_t y, Figure key_x, Figure key_y) {
  const bool px = x >= 0 && sites.python(x) != nullptr;
  const bool py = y >= 0 && sites.python(y) != nullptr;
  if (px != py) return px;
  return key_x != key_y ? key_x > key_y : x < y;
}

void Sites::count(std::int32_t site, std::uint64_t block_size) {
  if (site < 0) return;
  ++counts_[site].first;
  counts_[site].second += block_size;
}

std::size_t focus(const std::vector<std::string>& texts) {
  std::size_t bare = 0;
  bool have_bare = false;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    bool runtime = false;
    for (const char* lib : kRuntimeLibraries) runtime |= texts[i].find(lib) != std::string::npos;
    if (runtime) continue;
    if (texts[i].find(' ') != std::string::npos) return i;
    if (!have_bare) {
      have_bare = true;
      bare = i;
    }
  }
  return bare;
}

}  // namespace cudapool::analyze
