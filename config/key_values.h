// SPDX-License-Identifier: Apache-2.0
// config/key_values.h: the functions that read one key's value into Options and render it back
// in user units (the ApplyFn and RenderFn of the key table, keys.h): MiB sizes, booleans,
// fractions, choice words, the roundup_power2_divisions list, and the PyTorch-only checks that
// store nothing. Value semantics follow PyTorch 2.11's AcceleratorAllocatorConfig /
// CUDAAllocatorConfig. The templates are here so that keys.cpp can name a field per table row.
// This file does not list keys (keys.cpp) or read words (number_readers.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "config/keys.h"
#include "config/number_readers.h"
#include "config/options.h"

namespace cudapool::config {

// --- integer MiB keys -----------------------------------------------------------------------

// A whole number of MiB, at least min_mib, as bytes. A value whose bytes do not fit in 64 bits
// (above 17592186044415 MiB) is rejected, where PyTorch caps it. Adds one problem when it fails.
bool read_mebibytes(const RawValue& value, std::size_t min_mib, std::size_t& bytes,
                    Problems& problems);

template <std::size_t Options::*Field, std::size_t kMinMiB>
void apply_mebibytes(const RawValue& value, Options& options, Problems& problems) {
  std::size_t bytes = 0;
  if (read_mebibytes(value, kMinMiB, bytes, problems)) options.*Field = bytes;
}

// large_segment_size_mb: at most this many MiB (1 TiB). The segment of every 1-10 MiB request
// (and, with expandable segments, every page of the large pool) is this large, so a value above
// any device's memory can only fail; PyTorch takes any value and then fails each such request
// (issue 26: with expandable segments, values above 2^43 MiB made every allocation fail with
// CUDA_ERROR_INVALID_VALUE, silently).
inline constexpr std::size_t kMaxLargeSegmentMebibytes = std::size_t{1} << 20;
// The driver maps device memory in pages of this many bytes (cuMemGetAllocationGranularity, 2 MiB
// on NVIDIA GPUs): with expandable segments large_segment_size_mb is a page size and must be a
// multiple of it (parse.cpp checks the pair of keys once the string is read).
inline constexpr std::size_t kDevicePageBytes = 2 * kMiB;
void apply_large_segment_size(const RawValue& value, Options& options, Problems& problems);

template <std::size_t Options::*Field>
std::string render_mebibytes(const Options& options) {
  const std::size_t bytes = options.*Field;
  return bytes == kSizeMax ? "unlimited" : number_text(bytes / kMiB);
}

// idle_release_ms: a whole number of milliseconds from 0 (off) to kMaxIdleReleaseMs (an hour);
// idle_release_floor_mb: any whole number of MiB (0: no floor).
inline constexpr std::uint64_t kMaxIdleReleaseMs = 3600000;
void apply_idle_release_ms(const RawValue& value, Options& options, Problems& problems);
std::string render_idle_release_ms(const Options& options);
void apply_idle_release_floor(const RawValue& value, Options& options, Problems& problems);
// expandable_handle_mb: a whole number of MiB from 0 (one handle per page) to
// kMaxLargeSegmentMebibytes (no handle is larger than a device).
void apply_expandable_handle(const RawValue& value, Options& options, Problems& problems);

// --- booleans, fractions, choices --------------------------------------------------------------

template <bool Options::*Field>
void apply_bool(const RawValue& value, Options& options, Problems& problems) {
  bool v = false;
  std::string error;
  if (read_bool(value.word, v, error)) {
    options.*Field = v;
  } else {
    problems.push_back(error);
  }
}

template <bool Options::*Field>
std::string render_bool(const Options& options) {
  return bool_text(options.*Field);
}

void apply_gc_threshold(const RawValue& value, Options& options, Problems& problems);
std::string render_gc_threshold(const Options& options);
void apply_memory_fraction(const RawValue& value, Options& options, Problems& problems);
std::string render_memory_fraction(const Options& options);

// A key whose value is one of a few words, each naming an enum value.
template <class Enum>
struct ChoiceWord {
  std::string_view word;
  Enum value;
};

inline constexpr ChoiceWord<ReuseFence> kReuseFenceWords[] = {
    {"auto", ReuseFence::kAuto}, {"sync", ReuseFence::kSync}, {"none", ReuseFence::kNone}};
inline constexpr ChoiceWord<ThreadCacheMode> kThreadCacheWords[] = {
    {"auto", ThreadCacheMode::kAuto},
    {"always", ThreadCacheMode::kAlways},
    {"never", ThreadCacheMode::kNever}};

template <auto Field, const auto& Words>
void apply_choice(const RawValue& value, Options& options, Problems& problems) {
  for (const auto& w : Words) {
    if (value.word == w.word) {
      options.*Field = w.value;
      return;
    }
  }
  problems.push_back(value.word.empty() ? "missing value" : "");
}

template <auto Field, const auto& Words>
std::string render_choice(const Options& options) {
  for (const auto& w : Words) {
    if (options.*Field == w.value) return std::string(w.word);
  }
  return std::string(Words[0].word);
}

// --- roundup_power2_divisions -------------------------------------------------------------------

// A power of two up to 2^54, or a list; above 2^54 the pool's 512 bytes x divisions overflows.
void apply_roundup(const RawValue& value, Options& options, Problems& problems);
// A taken list whose sizes repeat an interval or do not increase, or with an entry after '>':
// one remark per such entry (keys.h RemarkFn).
std::size_t remark_roundup(const RawValue& value, Problems& remarks, std::size_t max_remarks);
// "off" when rounding is plain everywhere, a single number when every entry is the same, else
// the shortest list that reads back to the same table.
std::string render_roundup(const Options& options);

// --- PyTorch-only keys: validated as PyTorch does, never stored ---------------------------------

std::string render_ignored(const Options& options);
void check_bool(const RawValue& value, Options& options, Problems& problems);
void check_backend(const RawValue& value, Options& options, Problems& problems);
void check_register_threads(const RawValue& value, Options& options, Problems& problems);
void check_positive_mebibytes(const RawValue& value, Options& options, Problems& problems);

}  // namespace cudapool::config
