// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/conf_fuzz.cpp: the libFuzzer target for the conf-string parser (config/). Any bytes
// are a conf string: parse_conf() and describe() must not crash, and what they return must keep
// the documented promises (docs/configuration.md): every value in force within its key's range,
// the described settings written back as a conf string parse to the same options without a
// word, at most 64 diagnostics plus a summary, and every message one line that a terminal shows
// as text (no control bytes, no C1 or bidirectional controls, well-formed UTF-8). A broken
// promise aborts with the reason (libFuzzer keeps the input). Not a unit test: those are
// tests/unit/test_config*.cpp; run by tests/fuzz/run.sh.
// fuzz-links: cudapool_config
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "config/describe.h"
#include "config/diagnostic.h"
#include "config/key_values.h"
#include "config/keys.h"
#include "config/options.h"
#include "config/parse.h"
#include "config/terminal_text.h"

namespace {

namespace cfg = cudapool::config;

constexpr std::size_t kSizeMax = static_cast<std::size_t>(-1);
constexpr std::size_t kMaxMebibytes = kSizeMax / cfg::kMiB;  // bytes fit in 64 bits
constexpr std::size_t kMaxDivisions = std::size_t{1} << 54;

[[noreturn]] void broken(const char* promise, std::string_view detail) {
  std::fprintf(stderr, "conf_fuzz: broken promise: %s\n  %s\n", promise,
               cfg::escape_for_terminal(detail.substr(0, 2000)).c_str());
  std::abort();
}

void require(bool ok, const char* promise, std::string_view detail = "") {
  if (!ok) broken(promise, detail);
}

// One well-formed UTF-8 character at text[at], or 0 (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF). Written apart from config/terminal_text.cpp, so as to check it.
std::size_t utf8_length(std::string_view text, std::size_t at, char32_t& code) {
  const auto b0 = static_cast<unsigned char>(text[at]);
  std::size_t n = b0 < 0x80                  ? 1
                  : b0 >= 0xc2 && b0 <= 0xdf ? 2
                  : b0 >= 0xe0 && b0 <= 0xef ? 3
                  : b0 >= 0xf0 && b0 <= 0xf4 ? 4
                                             : 0;
  if (n == 0 || text.size() - at < n) return 0;
  code = n == 1 ? b0 : n == 2 ? b0 & 0x1f : n == 3 ? b0 & 0x0f : b0 & 0x07;
  for (std::size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(text[at + i]);
    if ((b & 0xc0) != 0x80) return 0;
    code = (code << 6) | (b & 0x3f);
  }
  const char32_t smallest = n == 1 ? 0 : n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  if (code < smallest || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return 0;
  return n;
}

// What a terminal shows as text: well-formed UTF-8 without C0/C1 controls, DEL or bidirectional
// controls.
void require_terminal_text(std::string_view text, const char* what) {
  std::size_t at = 0;
  while (at < text.size()) {
    if (text[at] >= 0x20 && text[at] < 0x7f) {  // printable ASCII: the common case, quickly
      ++at;
      continue;
    }
    char32_t code = 0;
    const std::size_t n = utf8_length(text, at, code);
    require(n != 0, what, text);
    const bool control = code < 0x20 || (code >= 0x7f && code <= 0x9f);
    const bool bidi = code == 0x200e || code == 0x200f || (code >= 0x202a && code <= 0x202e) ||
                      (code >= 0x2066 && code <= 0x2069);
    require(!control && !bidi, what, text);
    at += n;
  }
}

bool whole_mebibytes(std::size_t bytes, std::size_t min_mib) {
  return bytes % cfg::kMiB == 0 && bytes / cfg::kMiB >= min_mib &&
         bytes / cfg::kMiB <= kMaxMebibytes;
}

void require_in_range(const cfg::Options& o, std::string_view conf) {
  require(o.max_split_size == kSizeMax || whole_mebibytes(o.max_split_size, 20),
          "max_split_size is unlimited or 20..17592186044415 MiB", conf);
  require(whole_mebibytes(o.max_non_split_rounding, 20),
          "max_non_split_rounding is 20..17592186044415 MiB", conf);
  require(whole_mebibytes(o.large_segment_size, 11) &&
              o.large_segment_size / cfg::kMiB <= cfg::kMaxLargeSegmentMebibytes,
          "large_segment_size is 11..1048576 MiB", conf);
  require(!o.expandable_segments || o.large_segment_size % cfg::kDevicePageBytes == 0,
          "with expandable segments large_segment_size is whole 2 MiB pages", conf);
  for (const std::size_t d : o.roundup_power2_divisions) {
    require(d == 0 || (std::has_single_bit(d) && d <= kMaxDivisions),
            "every roundup_power2_divisions entry is 0 or a power of two <= 2^54", conf);
  }
  const double gc = o.garbage_collection_threshold;
  require(gc == 0.0 || (gc > 0.0 && gc < 1.0), "garbage_collection_threshold is off or in (0, 1)",
          conf);
  require(!std::signbit(gc), "garbage_collection_threshold is not -0", conf);
  const double fraction = o.per_process_memory_fraction;
  require(fraction >= 0.0 && fraction <= 1.0 && !std::signbit(fraction),
          "per_process_memory_fraction is in [0, 1] and not -0", conf);
  require(o.reuse_fence <= cfg::ReuseFence::kNone, "reuse_fence is a known mode", conf);
  require(o.thread_cache <= cfg::ThreadCacheMode::kNever, "thread_cache is a known mode", conf);
  require(o.idle_release_ms <= cfg::kMaxIdleReleaseMs, "idle_release_ms is 0..3600000", conf);
  require(o.idle_release_floor == 0 || whole_mebibytes(o.idle_release_floor, 0),
          "idle_release_floor is whole MiB", conf);
  require(o.expandable_handle == 0 ||
              (whole_mebibytes(o.expandable_handle, 0) &&
               o.expandable_handle / cfg::kMiB <= cfg::kMaxLargeSegmentMebibytes),
          "expandable_handle is 0..1048576 MiB", conf);
}

// Divisions of 0 and 1 both mean plain rounding, and render alike ("off").
bool same_options(const cfg::Options& a, const cfg::Options& b) {
  for (std::size_t i = 0; i < cfg::kRoundupIntervals; ++i) {
    const std::size_t x = a.roundup_power2_divisions[i];
    const std::size_t y = b.roundup_power2_divisions[i];
    if (x != y && !(x <= 1 && y <= 1)) return false;
  }
  return a.max_split_size == b.max_split_size &&
         a.max_non_split_rounding == b.max_non_split_rounding &&
         a.garbage_collection_threshold == b.garbage_collection_threshold &&
         a.expandable_segments == b.expandable_segments &&
         a.per_process_memory_fraction == b.per_process_memory_fraction &&
         a.release_lock_on_cudamalloc == b.release_lock_on_cudamalloc &&
         a.large_segment_size == b.large_segment_size && a.reuse_fence == b.reuse_fence &&
         a.thread_cache == b.thread_cache && a.strict == b.strict &&
         a.idle_release_ms == b.idle_release_ms && a.idle_release_floor == b.idle_release_floor &&
         a.expandable_handle == b.expandable_handle;
}

void require_messages(const cfg::ParseResult& r, std::string_view conf) {
  require(r.diagnostics.size() <= cfg::kMaxDiagnostics + 1, "at most 64 diagnostics + a summary",
          conf);
  require(r.notes.size() <= cfg::kMaxDiagnostics + 1, "at most 64 notes + a summary", conf);
  for (const cfg::Diagnostic& d : r.diagnostics) {
    require(d.key.size() <= cfg::kMaxQuotedChars && d.value.size() <= cfg::kMaxQuotedChars,
            "a diagnostic quotes at most 80 bytes of key and of value", d.key + ":" + d.value);
    const std::string message = d.message();
    require(message.rfind("cudapool: ", 0) == 0, "a diagnostic starts with 'cudapool: '", message);
    require(message.size() < 2000, "a diagnostic is bounded", message);
    require_terminal_text(message, "a diagnostic is terminal text");
  }
  for (const cfg::Note& n : r.notes) {
    const std::string message = n.message();
    require(message.rfind("cudapool: note: ", 0) == 0, "a note starts with 'cudapool: note: '",
            message);
    require_terminal_text(message, "a note is terminal text");
  }
  for (std::size_t i = 0; i < r.set_keys.size(); ++i) {
    const cfg::KeyInfo* key = cfg::find_key(r.set_keys[i]);
    require(key != nullptr && key->name == r.set_keys[i], "set_keys are table names",
            r.set_keys[i]);
    for (std::size_t j = 0; j < i; ++j) {
      require(r.set_keys[j] != r.set_keys[i], "set_keys has no repeats", r.set_keys[i]);
    }
  }
}

// The settings describe() lists, written back as a conf string: the words that stand for a
// default ("unlimited", "off") and PyTorch-only keys ("ignored") are left out.
std::string written_back(const std::vector<cfg::EffectiveSetting>& settings) {
  std::string conf;
  for (const cfg::EffectiveSetting& s : settings) {
    if (s.value == "unlimited" || s.value == "off" || s.value == "ignored") continue;
    if (!conf.empty()) conf += ',';
    conf += s.name + ":" + s.value;
  }
  return conf;
}

void require_round_trip(const cfg::ParseResult& r, std::string_view conf) {
  const std::vector<cfg::EffectiveSetting> settings = cfg::describe(r);
  for (const cfg::EffectiveSetting& s : settings) {
    require(!s.value.empty(), "every described setting has a value", s.name);
    require_terminal_text(s.value, "a described value is terminal text");
    require(s.origin == "conf" || s.origin == "default", "origin is conf or default", s.origin);
  }
  const std::string again = written_back(settings);
  const cfg::ParseResult back = cfg::parse_conf(again);
  std::string why = again;
  for (const cfg::Diagnostic& d : back.diagnostics) why += "\n" + d.message();
  require(back.diagnostics.empty(), "the described settings parse back without a diagnostic", why);
  require(same_options(r.options, back.options),
          "the described settings parse back to the same options",
          std::string(conf.substr(0, 500)) + "\n=> " + again);
  const std::vector<cfg::EffectiveSetting> settings_back = cfg::describe(back);
  for (const cfg::EffectiveSetting& t : settings) {
    if (t.value == "ignored") continue;
    bool found = false;
    for (const cfg::EffectiveSetting& s : settings_back) {
      if (s.name != t.name) continue;
      found = true;
      require(s.value == t.value && s.type == t.type, "described values are stable",
              s.name + ": " + t.value + " then " + s.value);
    }
    require(found, "describe lists every key of the table", t.name);
  }
}

void require_terminal_text_helpers(std::string_view text) {
  require_terminal_text(cfg::escape_for_terminal(text), "escape_for_terminal gives terminal text");
  require_terminal_text(cfg::escape_for_terminal(text, '"'), "escape_for_terminal (quoted)");
  for (const std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{77}, text.size()}) {
    const std::size_t cut = cfg::character_boundary(text, limit);
    if (text.size() <= limit) {
      require(cut == text.size(), "character_boundary keeps text within the limit whole", text);
      continue;
    }
    require(cut <= limit, "character_boundary stays within the limit", text);
    require(cut + 4 > limit, "character_boundary backs off less than one character", text);
    {
      // The cut is not inside a well-formed character that starts before it.
      for (std::size_t back = 1; back <= 3 && back <= cut; ++back) {
        char32_t code = 0;
        const std::size_t n = utf8_length(text, cut - back, code);
        require(n == 0 || n <= back, "character_boundary never splits a character", text);
      }
    }
  }
  const std::string short_text = cfg::shorten(text);
  require(short_text.size() <= cfg::kMaxQuotedChars, "shorten gives at most 80 bytes", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view conf(reinterpret_cast<const char*>(data), size);
  const cfg::ParseResult r = cfg::parse_conf(conf);
  require_in_range(r.options, conf);
  require_messages(r, conf);
  require_round_trip(r, conf);
  require_terminal_text_helpers(conf);
  return 0;
}
