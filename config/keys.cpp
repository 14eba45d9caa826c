// config/keys.cpp: the key table and the per-key value readers and renderers (see keys.h).
// Value semantics follow PyTorch 2.11's AcceleratorAllocatorConfig / CUDAAllocatorConfig,
// except that numbers must be written whole (PyTorch's stoull would take "12abc" as 12).
// This file does not walk the conf string; parse.cpp does.
#include "config/keys.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "config/diagnostic.h"

namespace cudapool::config {

namespace {

constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();
// PyTorch caps MiB values here so that value * 1 MiB cannot overflow.
constexpr std::size_t kMaxMebibytes = kSizeMax / kMiB;
// PyTorch's pinned_max_register_threads().
constexpr std::size_t kMaxRegisterThreads = 128;

bool is_power_of_two(std::size_t v) {
  return std::has_single_bit(v);
}

// Optional '+' as std::stoull/std::stod allow it; a second sign is not a number.
std::string_view drop_plus(std::string_view word) {
  if (!word.empty() && word.front() == '+') word.remove_prefix(1);
  return word;
}

// A whole unsigned decimal integer. On failure `error` says why.
bool read_unsigned(std::string_view word, std::size_t& out, std::string& error) {
  if (word.empty()) {
    error = "missing value";
    return false;
  }
  if (word.front() == '-') {
    error = "negative numbers are not accepted";
    return false;
  }
  const std::string_view digits = drop_plus(word);
  std::size_t value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (ec == std::errc::result_out_of_range) {
    error = "the number does not fit in 64 bits";
    return false;
  }
  if (digits.empty() || ec != std::errc() || ptr != end) {
    error = "not an integer";
    return false;
  }
  out = value;
  return true;
}

// A whole finite decimal number (fixed or scientific notation).
bool read_number(std::string_view word, double& out, std::string& error) {
  if (word.empty()) {
    error = "missing value";
    return false;
  }
  const std::string_view text = drop_plus(word);
  if (!text.empty() && text.front() == '+') {
    error = "not a number";
    return false;
  }
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    error = "the number is out of range";
    return false;
  }
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    error = "not a number";
    return false;
  }
  out = value;
  return true;
}

bool read_bool(std::string_view word, bool& out, std::string& error) {
  if (word == "True" || word == "False") {
    out = word == "True";
    return true;
  }
  if (word.empty()) {
    error = "missing value";
  } else if (word == "true" || word == "false" || word == "TRUE" || word == "FALSE") {
    error = "write True or False, with a capital first letter";
  } else {
    error.clear();
  }
  return false;
}

std::string number_text(std::size_t v) {
  return std::to_string(v);
}

// Shortest text that reads back as the same double ("0.6", "1", "1e-05").
std::string number_text(double v) {
  std::array<char, 64> buf{};
  const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return "?";
  return std::string(buf.data(), ptr);
}

std::string bool_text(bool v) {
  return v ? "True" : "False";
}

// --- integer MiB keys -----------------------------------------------------------------------

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
  bytes = std::min(mib, kMaxMebibytes) * kMiB;
  return true;
}

template <std::size_t Options::*Field, std::size_t kMinMiB>
void apply_mebibytes(const RawValue& value, Options& options, Problems& problems) {
  std::size_t bytes = 0;
  if (read_mebibytes(value, kMinMiB, bytes, problems)) options.*Field = bytes;
}

template <std::size_t Options::*Field>
std::string render_mebibytes(const Options& options) {
  const std::size_t bytes = options.*Field;
  return bytes == kSizeMax ? "unlimited" : number_text(bytes / kMiB);
}

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

// A key whose value is one of a few words, each naming an enum value.
template <class Enum>
struct ChoiceWord {
  std::string_view word;
  Enum value;
};

constexpr ChoiceWord<ReuseFence> kReuseFenceWords[] = {
    {"auto", ReuseFence::kAuto}, {"sync", ReuseFence::kSync}, {"none", ReuseFence::kNone}};
constexpr ChoiceWord<ThreadCacheMode> kThreadCacheWords[] = {{"auto", ThreadCacheMode::kAuto},
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
  }
}

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
