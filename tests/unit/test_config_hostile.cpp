// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_hostile.cpp: conf strings written to break the parser or the terminal
// (issue 18, defects 6 and 8): sizes whose bytes overflow 64 bits, divisions that overflow the
// pool's arithmetic, roundup lists with repeated or unordered sizes, a negative zero, and control
// bytes or cut UTF-8 characters in diagnostics. Not the everyday bad forms (test_config_bad_forms).
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "config/describe.h"
#include "config/diagnostic.h"
#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::describe;
using cudapool::config::Diagnostic;
using cudapool::config::kMiB;
using cudapool::config::kRoundupIntervals;
using cudapool::config::Note;
using cudapool::config::Options;
using cudapool::config::parse_conf;
using cudapool::config::ParseResult;
using cudapool::config::shorten;
using Table = std::array<std::size_t, kRoundupIntervals>;

Table filled(std::size_t v) {
  Table t{};
  t.fill(v);
  return t;
}

std::string shown(const ParseResult& r, const std::string& name) {
  for (const auto& s : describe(r)) {
    if (s.name == name) return s.value;
  }
  return "?";
}

std::vector<std::string> all_messages(const ParseResult& r) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics) out.push_back(d.message());
  for (const auto& n : r.notes) out.push_back(n.message());
  return out;
}

// No byte a terminal acts on: C0 controls, DEL, and (as raw bytes) the C1 range.
bool terminal_safe(const std::string& text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return false;
  }
  return text.find("\xc2\x9b") == std::string::npos &&
         text.find("\xe2\x80\xae") == std::string::npos;
}

// Whether `text` is well-formed UTF-8 (no sequence cut short).
bool valid_utf8(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t n = b < 0x80           ? 1
                          : (b >> 5) == 0x6  ? 2
                          : (b >> 4) == 0xe  ? 3
                          : (b >> 3) == 0x1e ? 4
                                             : 0;
    if (n == 0 || i + n > text.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

// --- defect 6: overflow, list order, negative zero ----------------------------------------------

TEST_CASE("config: hostile: a MiB value whose bytes overflow 64 bits is rejected, default kept") {
  const ParseResult r = parse_conf("max_split_size_mb:18446744073709551615");
  CHECK(r.options.max_split_size == Options{}.max_split_size);
  CHECK(r.set_keys.empty());
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail ==
        "the size in bytes does not fit in 64 bits (at most 17592186044415 MiB)");
  CHECK(r.diagnostics[0].kept == "unlimited");
  CHECK(r.diagnostics[0].message() ==
        "cudapool: Invalid conf pair: max_split_size_mb:18446744073709551615 (the size in bytes "
        "does not fit in 64 bits (at most 17592186044415 MiB); accepted: an integer >= 20 (MiB); "
        "keeping: unlimited)");
  CHECK(shown(r, "max_split_size_mb") == "unlimited");
}

TEST_CASE("config: hostile: the largest MiB value whose bytes fit is taken exactly") {
  const ParseResult r = parse_conf("max_split_size_mb:17592186044415");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.max_split_size == std::size_t{17592186044415} * kMiB);
  CHECK(shown(r, "max_split_size_mb") == "17592186044415");
}

TEST_CASE("config: hostile: every MiB key rejects one MiB past the 64-bit limit") {
  for (const char* key : {"max_split_size_mb", "max_non_split_rounding_mb", "large_segment_size_mb",
                          "pinned_reserve_segment_size_mb"}) {
    INFO(key);
    const ParseResult r = parse_conf(std::string(key) + ":17592186044416");
    CHECK(r.options.max_non_split_rounding == Options{}.max_non_split_rounding);
    CHECK(r.options.large_segment_size == Options{}.large_segment_size);
    CHECK(r.notes.empty());
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].detail.find("does not fit in 64 bits") != std::string::npos);
    // The largest whose bytes fit is taken, but large_segment_size_mb stops at 1 TiB.
    CHECK(parse_conf(std::string(key) + ":17592186044415").diagnostics.empty() ==
          (std::string(key) != "large_segment_size_mb"));
  }
  const ParseResult kept = parse_conf("max_non_split_rounding_mb:64,max_non_split_rounding_mb:" +
                                      std::string("99999999999999"));
  CHECK(kept.options.max_non_split_rounding == 64 * kMiB);
  REQUIRE(kept.diagnostics.size() == 1);
  CHECK(kept.diagnostics[0].kept == "64");
}

TEST_CASE("config: hostile: roundup_power2_divisions above 2^54 is rejected, off kept") {
  for (const char* value : {"9223372036854775808", "36028797018963968", "[256:9223372036854775808]",
                            "[256:1,>:36028797018963968]"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("roundup_power2_divisions:") + value);
    CHECK(r.options.roundup_power2_divisions == filled(0));
    CHECK(r.set_keys.empty());
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].detail.find("at most 2^54") != std::string::npos);
    CHECK(r.diagnostics[0].kept == "off");
  }
  const ParseResult big = parse_conf("roundup_power2_divisions:18014398509481984");  // 2^54
  CHECK(big.diagnostics.empty());
  CHECK(big.options.roundup_power2_divisions == filled(std::size_t{1} << 54));
}

TEST_CASE("config: hostile: a repeated size in a roundup list is reported, the last one used") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:1,256:4]");
  // As PyTorch: 256 fills entries 0..8 with 1, then entry 8 takes 4.
  Table want{};
  for (std::size_t i = 0; i < 8; ++i) want[i] = 1;
  want[8] = 4;
  CHECK(r.options.roundup_power2_divisions == want);
  CHECK(r.set_keys == std::vector<std::string>{"roundup_power2_divisions"});
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail ==
        "entry '256:4' sets the same interval as '256:1'; the last one is used");
  CHECK(r.diagnostics[0].kept == "[128:1,256:4,>:0]");
  CHECK(r.diagnostics[0].accepted.empty());
}

TEST_CASE("config: hostile: sizes past 32768 MiB share the last interval and count as repeats") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[65536:8,131072:4]");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail.find("entry '131072:4' sets the same interval as '65536:8'") == 0);
  CHECK(r.options.roundup_power2_divisions[15] == 4);
}

TEST_CASE("config: hostile: roundup list sizes out of order are reported and applied in order") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[512:2,256:1]");
  Table want = filled(0);
  for (std::size_t i = 0; i < 9; ++i) want[i] = 2;  // 512 (entry 9) fills below it first
  want[9] = 2;
  want[8] = 1;
  CHECK(r.options.roundup_power2_divisions == want);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail ==
        "entry '256:1' comes after '512:2': list sizes must increase (entries are applied in "
        "order, as PyTorch does)");
}

TEST_CASE("config: hostile: an entry after '>' is reported") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[>:4,256:2]");
  Table want = filled(4);
  for (std::size_t i = 0; i <= 8; ++i) want[i] = 2;
  CHECK(r.options.roundup_power2_divisions == want);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail ==
        "entry '256:2' comes after '>:4': '>' must be the last entry (entries are applied in "
        "order, as PyTorch does)");
  CHECK(parse_conf("roundup_power2_divisions:[256:1,>:2,>:4]").diagnostics.size() == 1);
}

TEST_CASE("config: hostile: every bad roundup entry is reported, however many") {
  std::string list = "[";
  for (int i = 0; i < 100; ++i) list += "256:1,";
  list += "]";
  const ParseResult r = parse_conf("roundup_power2_divisions:" + list);
  REQUIRE(r.diagnostics.size() == cudapool::config::kMaxDiagnostics + 1);
  CHECK(r.diagnostics.back().message() == "cudapool: further 35 diagnostics suppressed");
}

TEST_CASE("config: hostile: an ordered roundup list is taken without a word") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[1:2,64:8,256:4,1024:4,>:1]");
  CHECK(r.diagnostics.empty());
}

TEST_CASE("config: hostile: per_process_memory_fraction:-0 is taken as 0 and shown as 0") {
  for (const char* value : {"-0", "-0.0", "-0e5", "+0"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("per_process_memory_fraction:") + value);
    CHECK(r.diagnostics.empty());
    CHECK(r.options.per_process_memory_fraction == 0.0);
    CHECK_FALSE(std::signbit(r.options.per_process_memory_fraction));
    CHECK(shown(r, "per_process_memory_fraction") == "0");
  }
  CHECK(parse_conf("garbage_collection_threshold:-0").diagnostics.size() == 1);
}

// --- defect 8: terminal escapes and cut characters
// ------------------------------------------------

TEST_CASE("config: hostile: an escape sequence in a value is escaped in the message") {
  const ParseResult r = parse_conf("max_split_size_mb:\x1b[31mred");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].value == "\x1b[31mred");  // the field keeps what was written
  CHECK(r.diagnostics[0].message() ==
        "cudapool: Invalid conf pair: max_split_size_mb:\\x1b[31mred (unexpected '[' after the "
        "value; accepted: an integer >= 20 (MiB); keeping: unlimited)");
}

TEST_CASE("config: hostile: control bytes, DEL, C1 controls and bad UTF-8 are escaped") {
  CHECK(Diagnostic{"k\x07", "a\x01\x7f", "", "", ""}.message() ==
        "cudapool: Invalid conf pair: k\\x07:a\\x01\\x7f");
  CHECK(Diagnostic{"k",
                   "\xc2\x9b"
                   "2J",
                   "", "", ""}
            .message() == "cudapool: Invalid conf pair: k:\\u009b2J");
  CHECK(Diagnostic{"k", "\xff\xfe\xc3", "", "", ""}.message() ==
        "cudapool: Invalid conf pair: k:\\xff\\xfe\\xc3");
  CHECK(Diagnostic{"k",
                   "\xe2\x80\xae"
                   "cba",
                   "", "", ""}
            .message() == "cudapool: Invalid conf pair: k:\\u202ecba");
  CHECK(Diagnostic{"k", "a\\x1b", "", "", ""}.message() ==
        "cudapool: Invalid conf pair: k:a\\\\x1b");
  CHECK(Diagnostic{"", "", "", "", "why\x1b"}.message() == "cudapool: why\\x1b");
  CHECK(Note{"", "n\x1b[0m"}.message() == "cudapool: note: n\\x1b[0m");
  // Printable UTF-8 passes as it is.
  CHECK(Diagnostic{"k", "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80", "", "", ""}.message() ==
        "cudapool: Invalid conf pair: k:caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80");
}

TEST_CASE("config: hostile: no byte value reaches a message raw") {
  for (int byte = 0; byte < 256; ++byte) {
    const std::string b(1, static_cast<char>(byte));
    for (const std::string& conf : {"max_split_size_mb:1" + b, "k" + b + "ey:1",
                                    "roundup_power2_divisions:[" + b + ":1]", b + "," + b}) {
      for (const std::string& message : all_messages(parse_conf(conf))) {
        INFO("byte " << byte << ": " << message);
        CHECK(terminal_safe(message));
        CHECK(valid_utf8(message));
      }
    }
  }
}

TEST_CASE("config: hostile: shorten cuts on a UTF-8 character boundary") {
  // 'é' is 2 bytes, '€' 3, U+1F600 4: each straddles byte 77, where a cut falls.
  CHECK(shorten(std::string(76, 'a') + "\xc3\xa9" + std::string(20, 'b')) ==
        std::string(76, 'a') + "...");
  CHECK(shorten(std::string(75, 'a') + "\xe2\x82\xac\xe2\x82\xac") == std::string(75, 'a') + "...");
  CHECK(shorten(std::string(76, 'a') + "\xf0\x9f\x98\x80" + "xx") == std::string(76, 'a') + "...");
  CHECK(shorten(std::string(77, 'a') + "\xc3\xa9" + "xx") == std::string(77, 'a') + "...");
  // Up to 80 bytes stay whole; invalid bytes are cut like any other.
  CHECK(shorten(std::string(78, 'a') + "\xc3\xa9") == std::string(78, 'a') + "\xc3\xa9");
  CHECK(shorten(std::string(90, '\x80')) == std::string(77, '\x80') + "...");
}

TEST_CASE("config: hostile: a long value is cut on a character boundary in the diagnostic") {
  std::string value;
  for (int i = 0; i < 60; ++i) value += "\xc3\xa9";  // 120 bytes of 'é'
  const ParseResult r = parse_conf("max_split_size_mb:" + value);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(valid_utf8(r.diagnostics[0].value));
  CHECK(r.diagnostics[0].value.size() <= 80);
  CHECK(valid_utf8(r.diagnostics[0].message()));
  const ParseResult key = parse_conf(value + ":1");
  REQUIRE(key.diagnostics.size() == 1);
  CHECK(valid_utf8(key.diagnostics[0].message()));
  const ParseResult entry = parse_conf("roundup_power2_divisions:[" + value + ":1]");
  REQUIRE(entry.diagnostics.size() == 1);
  CHECK(valid_utf8(entry.diagnostics[0].message()));
}
