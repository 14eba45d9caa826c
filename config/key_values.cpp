// SPDX-License-Identifier: Apache-2.0
// config/key_values.cpp: the per-key value readers and renderers that are not templates (see
// key_values.h): MiB sizes, the two fractions, the roundup_power2_divisions list (and its remarks
// on repeated or unordered sizes), and the PyTorch-only checks. This file does not list keys
// (keys.cpp) or walk the conf string (parse.cpp).
#include "config/key_values.h"

#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <vector>

#include "config/diagnostic.h"

namespace cudapool::config {

namespace {

// The largest MiB value whose bytes fit in 64 bits. PyTorch silently caps larger values to this;
// cudapool rejects them (issue 18), so that what is shown is what was written.
constexpr std::size_t kMaxMebibytes = kSizeMax / kMiB;
// The pool compares a request with 512 bytes (its smallest block, pool/constants.h kMinBlockSize)
// times the divisions; above 2^54 divisions that product overflows 64 bits (PyTorch's round_size
// overflows the same way and then rounds every request up to a power of two). Rejected.
constexpr std::size_t kMaxDivisions = std::size_t{1} << 54;

std::string mebibytes_overflow() {
  return "the size in bytes does not fit in 64 bits (at most " + number_text(kMaxMebibytes) +
         " MiB)";
}

std::string too_many_divisions() {
  return "at most 2^54 (" + number_text(kMaxDivisions) +
         ") divisions: 512 bytes (the smallest block) times the divisions must fit in 64 bits";
}
// PyTorch's pinned_max_register_threads().
constexpr std::size_t kMaxRegisterThreads = 128;

}  // namespace

bool read_mebibytes(const RawValue& value, std::size_t min_mib, std::size_t& bytes,
                    Problems& problems) {
  std::size_t mib = 0;
  std::string error;
  if (!read_unsigned(value.word, mib, error)) {
    problems.push_back(error);
    return false;
  }
  if (mib < min_mib) {
    problems.emplace_back();
    return false;
  }
  if (mib > kMaxMebibytes) {
    problems.push_back(mebibytes_overflow());
    return false;
  }
  bytes = mib * kMiB;
  return true;
}

void apply_large_segment_size(const RawValue& value, Options& options, Problems& problems) {
  std::size_t bytes = 0;
  if (!read_mebibytes(value, 11, bytes, problems)) return;
  if (bytes / kMiB > kMaxLargeSegmentMebibytes) {
    problems.push_back(
        "more than any device's memory: every segment this large would fail (at most " +
        number_text(kMaxLargeSegmentMebibytes) + " MiB, 1 TiB)");
    return;
  }
  options.large_segment_size = bytes;
}

void apply_gc_threshold(const RawValue& value, Options& options, Problems& problems) {
  double v = 0;
  std::string error;
  if (!read_number(value.word, v, error)) {
    problems.push_back(error);
  } else if (!(v > 0.0 && v < 1.0)) {
    problems.emplace_back();
  } else {
    options.garbage_collection_threshold = v;
  }
}

std::string render_gc_threshold(const Options& options) {
  const double v = options.garbage_collection_threshold;
  return v > 0.0 ? number_text(v) : "off";
}

void apply_memory_fraction(const RawValue& value, Options& options, Problems& problems) {
  double v = 0;
  std::string error;
  if (!read_number(value.word, v, error)) {
    problems.push_back(error);
  } else if (!(v >= 0.0 && v <= 1.0)) {
    problems.emplace_back();
  } else {
    options.per_process_memory_fraction = v;
  }
}

std::string render_memory_fraction(const Options& options) {
  return number_text(options.per_process_memory_fraction);
}

// --- roundup_power2_divisions -------------------------------------------------------------------

namespace {

using Divisions = std::array<std::size_t, kRoundupIntervals>;

// The table entry for a boundary of `mib` MiB (a power of two): log2, clamped to the table.
std::size_t interval_index(std::size_t mib) {
  const auto log2 = static_cast<std::size_t>(std::bit_width(mib) - 1);
  return std::min(log2, kRoundupIntervals - 1);
}

// State carried across list entries, as PyTorch keeps it.
struct ListState {
  Divisions divisions;
  bool first_integer = true;  // the first integer key also fills every entry below it
  std::size_t last_index = 0;
};

// One "MiB:divisions" or ">:divisions" entry, tokens [begin, end). Returns false (with one
// problem added) when the entry is malformed or out of range.
bool apply_list_entry(const std::vector<Token>& tokens, std::size_t begin, std::size_t end,
                      ListState& state, Problems& problems) {
  const std::string entry = shorten(join_tokens(tokens, begin, end, kMaxQuotedChars));
  const std::string where = "entry '" + entry + "'";
  const std::size_t n = end - begin;
  for (std::size_t i = begin; i < end; ++i) {
    if (tokens[i].kind == TokenKind::kOpen || tokens[i].kind == TokenKind::kClose) {
      problems.push_back(where + ": nested '[' is not allowed");
      return false;
    }
  }
  auto kind = [&](std::size_t i) { return tokens[begin + i].kind; };
  const bool well_formed = n == 3 && kind(0) == TokenKind::kWord && kind(1) == TokenKind::kColon &&
                           kind(2) == TokenKind::kWord;
  if (!well_formed) {
    if (n == 2 && kind(0) == TokenKind::kWord && kind(1) == TokenKind::kColon) {
      problems.push_back(where + " has no divisions after ':'");
    } else if (n == 2 && kind(0) == TokenKind::kColon && kind(1) == TokenKind::kWord) {
      problems.push_back(where + " has no size before ':'");
    } else {
      problems.push_back(where + " is not of the form MiB:divisions");
    }
    return false;
  }
  const std::string_view key = tokens[begin].text;
  std::size_t divisions = 0;
  std::string error;
  if (!read_unsigned(tokens[begin + 2].text, divisions, error)) {
    problems.push_back(where + ": divisions: " + error);
    return false;
  }
  if (divisions != 0 && !is_power_of_two(divisions)) {
    problems.push_back(where + ": divisions must be 0 or a power of two");
    return false;
  }
  if (divisions > kMaxDivisions) {
    problems.push_back(where + ": " + too_many_divisions());
    return false;
  }
  Divisions& d = state.divisions;
  if (key == ">") {
    std::fill(d.begin() + static_cast<std::ptrdiff_t>(std::min(state.last_index + 1, d.size())),
              d.end(), divisions);
    return true;
  }
  std::size_t mib = 0;
  if (!read_unsigned(key, mib, error)) {
    problems.push_back(where + ": size: " + error);
    return false;
  }
  if (!is_power_of_two(mib)) {
    problems.push_back(where + ": the size must be a power of two (MiB) or '>'");
    return false;
  }
  const std::size_t index = interval_index(mib);
  if (state.first_integer) {
    std::fill(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(index), divisions);
    state.first_integer = false;
  }
  d[index] = divisions;
  state.last_index = index;
  return true;
}

}  // namespace

void apply_roundup(const RawValue& value, Options& options, Problems& problems) {
  const std::size_t problems_before = problems.size();
  if (!value.is_list) {
    std::size_t v = 0;
    std::string error;
    if (!read_unsigned(value.word, v, error)) {
      problems.push_back(error);
    } else if (v == 0) {
      problems.push_back("0 is accepted only inside a list, e.g. [1:0,>:0]");
    } else if (!is_power_of_two(v)) {
      problems.emplace_back();
    } else if (v > kMaxDivisions) {
      problems.push_back(too_many_divisions());
    } else {
      options.roundup_power2_divisions.fill(v);
    }
    return;
  }
  const std::vector<Token>& tokens = *value.tokens;
  ListState state{options.roundup_power2_divisions};
  std::size_t entry_begin = value.begin;
  // Entries are split at ','; the loop never visits the empty piece after a final ',', so one
  // trailing ',' before ']' passes (PyTorch accepts "[256:2,]"), while "[,256:2]" does not.
  while (entry_begin < value.end) {
    std::size_t entry_end = entry_begin;
    while (entry_end < value.end && tokens[entry_end].kind != TokenKind::kComma) ++entry_end;
    if (entry_begin == entry_end) {
      problems.emplace_back("an empty entry (stray ',')");
    } else {
      apply_list_entry(tokens, entry_begin, entry_end, state, problems);
    }
    entry_begin = entry_end + 1;
  }
  if (problems.size() == problems_before) options.roundup_power2_divisions = state.divisions;
}

// Entries are read in order, as PyTorch applies them, so a list whose sizes do not increase, or
// with an entry after '>', means something other than it seems; PyTorch says nothing. Called only
// for a list apply_roundup() took, so every entry is well formed.
std::size_t remark_roundup(const RawValue& value, Problems& remarks, std::size_t max_remarks) {
  if (!value.is_list) return 0;
  const std::vector<Token>& tokens = *value.tokens;
  constexpr std::string_view kInOrder = " (entries are applied in order, as PyTorch does)";
  std::array<std::string, kRoundupIntervals> set_by;  // the entry that last named each interval
  std::string greater;                                // the '>' entry, once seen
  std::string previous;                               // the last integer entry
  std::size_t previous_index = 0;
  std::size_t further = 0;
  auto remark = [&](std::string text) {
    if (remarks.size() < max_remarks) {
      remarks.push_back(std::move(text));
    } else {
      ++further;
    }
  };
  std::size_t begin = value.begin;
  while (begin < value.end) {
    std::size_t end = begin;
    while (end < value.end && tokens[end].kind != TokenKind::kComma) ++end;
    if (end == begin) break;  // only a final ',' can be empty here
    const std::string entry = shorten(join_tokens(tokens, begin, end, kMaxQuotedChars));
    const std::string here = "entry '" + entry + "'";
    const bool is_greater = tokens[begin].text == ">";
    std::size_t mib = 0;
    std::string error;
    const std::size_t index =
        is_greater || !read_unsigned(tokens[begin].text, mib, error) ? 0 : interval_index(mib);
    if (!greater.empty()) {
      remark(here + " comes after '" + greater + "': '>' must be the last entry" +
             std::string(kInOrder));
    } else if (!is_greater && !set_by[index].empty()) {
      std::string text =
          here + " sets the same interval as '" + set_by[index] + "'; the last one is used";
      if (index == kRoundupIntervals - 1) text += " (sizes from 32768 MiB up are one interval)";
      remark(std::move(text));
    } else if (!is_greater && !previous.empty() && index < previous_index) {
      remark(here + " comes after '" + previous + "': list sizes must increase" +
             std::string(kInOrder));
    }
    if (is_greater) {
      greater = entry;
    } else {
      set_by[index] = entry;
      previous = entry;
      previous_index = index;
    }
    begin = end + 1;
  }
  return further;
}

// "off" when rounding is plain everywhere, a single number when every entry is the same, else
// the shortest list that reads back to the same table: the first run of equal entries as one
// MiB key, each middle entry on its own, the last run as ">".
std::string render_roundup(const Options& options) {
  const Divisions& d = options.roundup_power2_divisions;
  if (std::all_of(d.begin(), d.end(), [](std::size_t v) { return v <= 1; })) return "off";
  if (std::all_of(d.begin(), d.end(), [&](std::size_t v) { return v == d[0]; })) {
    return number_text(d[0]);
  }
  const std::size_t last = d.size() - 1;
  std::size_t first_run_end = 0;
  while (d[first_run_end + 1] == d[0]) ++first_run_end;
  std::size_t last_run_begin = last;
  while (d[last_run_begin - 1] == d[last]) --last_run_begin;
  auto mib = [](std::size_t index) { return number_text(std::size_t{1} << index); };
  std::string out = "[" + mib(first_run_end) + ":" + number_text(d[0]);
  for (std::size_t i = first_run_end + 1; i < last_run_begin; ++i) {
    out += "," + mib(i) + ":" + number_text(d[i]);
  }
  out += ",>:" + number_text(d[last]) + "]";
  return out;
}

// --- PyTorch-only keys: validated as PyTorch does, never stored ---------------------------------

std::string render_ignored(const Options&) {
  return "ignored";
}

void check_bool(const RawValue& value, Options&, Problems& problems) {
  bool v = false;
  std::string error;
  if (!read_bool(value.word, v, error)) problems.push_back(error);
}

void check_backend(const RawValue& value, Options&, Problems& problems) {
  if (value.word != "native" && value.word != "cudaMallocAsync") {
    problems.push_back(value.word.empty() ? "missing value" : "");
  }
}

void apply_idle_release_ms(const RawValue& value, Options& options, Problems& problems) {
  std::size_t v = 0;
  std::string error;
  if (!read_unsigned(value.word, v, error)) {
    problems.push_back(error);
  } else if (v > kMaxIdleReleaseMs) {
    problems.emplace_back();
  } else {
    options.idle_release_ms = v;
  }
}

std::string render_idle_release_ms(const Options& options) {
  return options.idle_release_ms == 0 ? "off" : number_text(options.idle_release_ms);
}

void apply_idle_release_floor(const RawValue& value, Options& options, Problems& problems) {
  std::size_t bytes = 0;
  if (read_mebibytes(value, 0, bytes, problems)) options.idle_release_floor = bytes;
}

void apply_expandable_handle(const RawValue& value, Options& options, Problems& problems) {
  std::size_t bytes = 0;
  if (!read_mebibytes(value, 0, bytes, problems)) return;
  if (bytes / kMiB > kMaxLargeSegmentMebibytes) {
    problems.push_back("more than any device's memory (at most " +
                       number_text(kMaxLargeSegmentMebibytes) + " MiB, 1 TiB)");
    return;
  }
  options.expandable_handle = bytes;
}

void check_register_threads(const RawValue& value, Options&, Problems& problems) {
  std::size_t v = 0;
  std::string error;
  if (!read_unsigned(value.word, v, error)) {
    problems.push_back(error);
  } else if (!is_power_of_two(v) || v > kMaxRegisterThreads) {
    problems.emplace_back();
  }
}

void check_positive_mebibytes(const RawValue& value, Options&, Problems& problems) {
  std::size_t v = 0;
  std::string error;
  if (!read_unsigned(value.word, v, error)) {
    problems.push_back(error);
  } else if (v == 0) {
    problems.emplace_back();
  } else if (v > kMaxMebibytes) {
    problems.push_back(mebibytes_overflow());
  }
}

}  // namespace cudapool::config
