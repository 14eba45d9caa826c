// SPDX-License-Identifier: Apache-2.0
// config/keys.cpp: the key table and the key lookup (see keys.h): which keys exist, their
// spellings, accepted text and defaults, and the reader and renderer of each (key_values.h).
// This file does not read values (key_values.cpp, number_readers.cpp) or walk the conf string
// (parse.cpp).
#include "config/keys.h"

#include <algorithm>
#include <vector>

#include "config/key_values.h"

namespace cudapool::config {

namespace {

constexpr std::string_view kMebibytesFrom20 = "an integer >= 20 (MiB)";
constexpr std::string_view kTrueFalse = "True or False";

constexpr KeyInfo kKeys[] = {
    {"max_split_size_mb", "", ValueKind::kMebibytes, kMebibytesFrom20, "unlimited", false,
     apply_mebibytes<&Options::max_split_size, 20>, render_mebibytes<&Options::max_split_size>},
    {"max_non_split_rounding_mb", "", ValueKind::kMebibytes, kMebibytesFrom20, "20", false,
     apply_mebibytes<&Options::max_non_split_rounding, 20>,
     render_mebibytes<&Options::max_non_split_rounding>},
    {"garbage_collection_threshold", "", ValueKind::kFraction,
     "a number greater than 0 and less than 1", "off", false, apply_gc_threshold,
     render_gc_threshold},
    {"roundup_power2_divisions", "", ValueKind::kRoundupDivisions,
     "a power of two up to 2^54, or a list [MiB:divisions,...,>:divisions] with MiB increasing "
     "powers of two and divisions 0 or a power of two up to 2^54",
     "off", false, apply_roundup, render_roundup, false, remark_roundup},
    {"expandable_segments", "", ValueKind::kBool, kTrueFalse, "False", false,
     apply_bool<&Options::expandable_segments>, render_bool<&Options::expandable_segments>},
    {"per_process_memory_fraction", "", ValueKind::kFraction, "a number from 0 to 1", "1", false,
     apply_memory_fraction, render_memory_fraction},
    {"release_lock_on_cudamalloc", "release_lock_on_hipmalloc", ValueKind::kBool, kTrueFalse,
     "False", false, apply_bool<&Options::release_lock_on_cudamalloc>,
     render_bool<&Options::release_lock_on_cudamalloc>},
    // large_segment_size_mb: in PyTorch 2.11 (seen in its AllocatorConfig.h on the GPU machine);
    // it must be above kMinLargeAlloc (10 MiB). cudapool also caps it (key_values.h
    // kMaxLargeSegmentMebibytes) and, with expandable segments, wants whole 2 MiB pages
    // (parse.cpp).
    {"large_segment_size_mb", "", ValueKind::kMebibytes,
     "an integer from 11 to 1048576 (MiB), even with expandable_segments:True", "20", false,
     apply_large_segment_size, render_mebibytes<&Options::large_segment_size>},
    // cudapool's own keys.
    {"reuse_fence", "", ValueKind::kChoice, "auto, sync or none", "auto", false,
     apply_choice<&Options::reuse_fence, kReuseFenceWords>,
     render_choice<&Options::reuse_fence, kReuseFenceWords>, true},
    {"thread_cache", "", ValueKind::kChoice, "auto, always or never", "auto", false,
     apply_choice<&Options::thread_cache, kThreadCacheWords>,
     render_choice<&Options::thread_cache, kThreadCacheWords>, true},
    {"strict", "", ValueKind::kBool, kTrueFalse, "False", false, apply_bool<&Options::strict>,
     render_bool<&Options::strict>, true},
    {"idle_release_ms", "", ValueKind::kCount, "an integer from 0 (off) to 3600000 (milliseconds)",
     "off", false, apply_idle_release_ms, render_idle_release_ms, true},
    {"idle_release_floor_mb", "", ValueKind::kMebibytes, "an integer >= 0 (MiB)", "0", false,
     apply_idle_release_floor, render_mebibytes<&Options::idle_release_floor>, true},
    {"expandable_handle_mb", "", ValueKind::kMebibytes,
     "an integer from 0 (one handle per page) to 1048576 (MiB)", "0", false,
     apply_expandable_handle, render_mebibytes<&Options::expandable_handle>, true},
    // PyTorch-only keys (default_text is PyTorch's default).
    {"backend", "", ValueKind::kChoice, "native or cudaMallocAsync", "native", true, check_backend,
     render_ignored},
    {"pinned_use_cuda_host_register", "pinned_use_hip_host_register", ValueKind::kBool, kTrueFalse,
     "False", true, check_bool, render_ignored},
    {"pinned_num_register_threads", "", ValueKind::kCount, "a power of two <= 128", "1", true,
     check_register_threads, render_ignored},
    {"pinned_use_background_threads", "", ValueKind::kBool, kTrueFalse, "False", true, check_bool,
     render_ignored},
    {"pinned_reserve_segment_size_mb", "", ValueKind::kMebibytes, "an integer > 0 (MiB)", "0", true,
     check_positive_mebibytes, render_ignored},
    {"graph_capture_record_stream_reuse", "", ValueKind::kBool, kTrueFalse, "False", true,
     check_bool, render_ignored},
};

// Levenshtein distance, or more than `limit` (not exact then) when it is above `limit`. Only the
// band of cells within `limit` of the diagonal can hold a distance <= limit, so only those are
// computed, and a row whose best cell is above `limit` ends the search.
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  const std::size_t far = limit + 1;
  const std::size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return far;
  const std::size_t m = b.size();
  if (m == 0) return a.size();  // <= limit: the gap says so
  std::vector<std::size_t> row(m + 1);
  for (std::size_t j = 0; j <= m; ++j) row[j] = j;
  std::size_t previous_high = m;  // row 0 is exact everywhere
  for (std::size_t i = 1; i <= a.size(); ++i) {
    const std::size_t low = i > limit ? i - limit : 1;
    const std::size_t high = std::min(m, i + limit);
    if (low > high) return far;
    std::size_t diagonal = row[low - 1];
    row[low - 1] = low == 1 ? i : far;  // left of the band
    std::size_t best = row[low - 1];
    for (std::size_t j = low; j <= high; ++j) {
      const std::size_t above = j <= previous_high ? row[j] : far;
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > limit) return far;
    previous_high = high;
  }
  return std::min(row[m], far);
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

}  // namespace

bool accepts_list(ValueKind kind) {
  return kind == ValueKind::kRoundupDivisions;
}

std::span<const KeyInfo> key_table() {
  return kKeys;
}

const KeyInfo* find_key(std::string_view name) {
  if (name.empty()) return nullptr;
  for (const KeyInfo& key : kKeys) {
    if (key.name == name || key.alias == name) return &key;
  }
  return nullptr;
}

std::string_view closest_key(std::string_view unknown) {
  constexpr std::size_t kMaxDistance = 3;
  std::string_view best;
  std::size_t best_distance = kMaxDistance + 1;
  for (const KeyInfo& key : kKeys) {
    for (std::string_view spelling : {key.name, key.alias}) {
      if (spelling.empty()) continue;
      const std::size_t d = equal_ignoring_case(spelling, unknown)
                                ? 0
                                : edit_distance(unknown, spelling, kMaxDistance);
      if (d < best_distance) {
        best_distance = d;
        best = key.name;
      }
    }
  }
  return best;
}

}  // namespace cudapool::config
