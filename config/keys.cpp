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
     "a power of two, or a list [MiB:divisions,...,>:divisions] with MiB a power of two and "
     "divisions 0 or a power of two",
     "off", false, apply_roundup, render_roundup},
    {"expandable_segments", "", ValueKind::kBool, kTrueFalse, "False", false,
     apply_bool<&Options::expandable_segments>, render_bool<&Options::expandable_segments>},
    {"per_process_memory_fraction", "", ValueKind::kFraction, "a number from 0 to 1", "1", false,
     apply_memory_fraction, render_memory_fraction},
    {"release_lock_on_cudamalloc", "release_lock_on_hipmalloc", ValueKind::kBool, kTrueFalse,
     "False", false, apply_bool<&Options::release_lock_on_cudamalloc>,
     render_bool<&Options::release_lock_on_cudamalloc>},
    // large_segment_size_mb: in PyTorch 2.11 (seen in its AllocatorConfig.h on the GPU machine);
    // it must be above kMinLargeAlloc (10 MiB).
    {"large_segment_size_mb", "", ValueKind::kMebibytes, "an integer > 10 (MiB)", "20", false,
     apply_mebibytes<&Options::large_segment_size, 11>,
     render_mebibytes<&Options::large_segment_size>},
    // cudapool's own keys.
    {"reuse_fence", "", ValueKind::kChoice, "auto, sync or none", "auto", false,
     apply_choice<&Options::reuse_fence, kReuseFenceWords>,
     render_choice<&Options::reuse_fence, kReuseFenceWords>, true},
    {"thread_cache", "", ValueKind::kChoice, "auto, always or never", "auto", false,
     apply_choice<&Options::thread_cache, kThreadCacheWords>,
     render_choice<&Options::thread_cache, kThreadCacheWords>, true},
    {"strict", "", ValueKind::kBool, kTrueFalse, "False", false, apply_bool<&Options::strict>,
     render_bool<&Options::strict>, true},
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

// Levenshtein distance, or limit + 1 when it is certainly above `limit`.
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  const std::size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return limit + 1;
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
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
