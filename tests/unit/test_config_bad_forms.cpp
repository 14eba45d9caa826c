// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_bad_forms.cpp: malformed conf strings: each is reported, the default or
// earlier value stays, and parsing goes on. Also the 1 MB input bound.
#include <chrono>
#include <string>

#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::kMaxDiagnostics;
using cudapool::config::kMiB;
using cudapool::config::Options;
using cudapool::config::parse_conf;
using cudapool::config::ParseResult;

const std::size_t kUnlimited = Options{}.max_split_size;

}  // namespace

TEST_CASE("config: unknown key is reported with the closest known key") {
  const ParseResult r = parse_conf("max_split_size:128,expandable_segments:True");
  CHECK(r.options.expandable_segments);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].key == "max_split_size");
  CHECK(r.diagnostics[0].value == "128");
  CHECK(r.diagnostics[0].detail == "unknown key; did you mean 'max_split_size_mb'?");
  CHECK(r.diagnostics[0].message() ==
        "cudapool: Invalid conf pair: max_split_size:128 (unknown key; did you mean "
        "'max_split_size_mb'?)");
}

TEST_CASE("config: unknown key far from every known key gets no suggestion") {
  const ParseResult r = parse_conf("colour:blue");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "unknown key");
}

TEST_CASE("config: unknown key with a misspelling of distance 3 still gets a suggestion") {
  const ParseResult r = parse_conf("expandible_segmnt:True");  // 3 edits
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "unknown key; did you mean 'expandable_segments'?");
  const ParseResult far = parse_conf("xpandible_segmnt:True");  // 4 edits
  REQUIRE(far.diagnostics.size() == 1);
  CHECK(far.diagnostics[0].detail == "unknown key");
}

TEST_CASE("config: unknown key's bracketed list is skipped whole") {
  const ParseResult r = parse_conf("bogus:[1:2,3:4,>:5],strict:True");
  CHECK(r.options.strict);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].value == "[1:2,3:4,>:5]");
}

TEST_CASE("config: '=' instead of ':' is reported and the value not applied") {
  const ParseResult r = parse_conf("max_split_size_mb=128,strict:True");
  CHECK(r.options.max_split_size == kUnlimited);
  CHECK(r.options.strict);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].key == "max_split_size_mb");
  CHECK(r.diagnostics[0].value == "128");
  CHECK(r.diagnostics[0].detail.find("use ':' between key and value") != std::string::npos);
  CHECK(r.diagnostics[0].kept == "unlimited");
}

TEST_CASE("config: '=' with an unknown key says both") {
  const ParseResult r = parse_conf("bogus=1");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail.find("unknown key") != std::string::npos);
  CHECK(r.diagnostics[0].detail.find("use ':'") != std::string::npos);
}

TEST_CASE("config: missing value after ':' is reported") {
  for (const char* conf : {"max_split_size_mb:", "max_split_size_mb:,strict:True"}) {
    INFO(conf);
    const ParseResult r = parse_conf(conf);
    CHECK(r.options.max_split_size == kUnlimited);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].key == "max_split_size_mb");
    CHECK(r.diagnostics[0].detail == "missing value");
  }
}

TEST_CASE("config: key without ':' and value is reported") {
  const ParseResult r = parse_conf("max_split_size_mb,strict:True");
  CHECK(r.options.strict);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "missing ':' and value");
}

TEST_CASE("config: key followed by a list without ':' is reported") {
  const ParseResult r = parse_conf("roundup_power2_divisions[256:2]");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "expected ':' after the key, found '['");
}

TEST_CASE("config: missing key before ':' is reported") {
  const ParseResult r = parse_conf(":128,strict:True");
  CHECK(r.options.strict);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "missing key before ':'");
}

TEST_CASE("config: a stray bracket where a key should be is reported") {
  const ParseResult r = parse_conf("]strict:True");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "expected a key, found ']'");
}

TEST_CASE("config: a list where a scalar is expected is reported") {
  for (const char* conf : {"max_split_size_mb:[128]", "expandable_segments:[True]",
                           "garbage_collection_threshold:[0.5]", "backend:[native]"}) {
    INFO(conf);
    const ParseResult r = parse_conf(conf);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].detail == "a list is not accepted here");
    CHECK(r.set_keys.empty());
  }
}

TEST_CASE("config: extra tokens after a value are reported and the pair not applied") {
  const ParseResult r = parse_conf("max_split_size_mb:128:256,expandable_segments:True]");
  CHECK(r.options.max_split_size == kUnlimited);
  CHECK_FALSE(r.options.expandable_segments);
  REQUIRE(r.diagnostics.size() == 2);
  CHECK(r.diagnostics[0].value == "128:256");
  CHECK(r.diagnostics[0].detail == "unexpected ':' after the value");
  CHECK(r.diagnostics[1].detail == "unexpected ']' after the value");
}

TEST_CASE("config: a doubled ':' is reported") {
  const ParseResult r = parse_conf("max_split_size_mb::128");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "expected a value, found ':'");
}

TEST_CASE("config: an unterminated list swallows the rest of the string") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:1,512:2,strict:True");
  CHECK_FALSE(r.options.strict);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "list not terminated (missing ']')");
}

TEST_CASE("config: numbers too large for size_t are rejected, not wrapped") {
  const ParseResult r = parse_conf("max_split_size_mb:99999999999999999999999");
  CHECK(r.options.max_split_size == kUnlimited);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].value == "99999999999999999999999");
}

TEST_CASE("config: negative numbers are rejected, not wrapped as stoull would") {
  for (const char* conf :
       {"max_split_size_mb:-1", "roundup_power2_divisions:-4", "pinned_num_register_threads:-8"}) {
    INFO(conf);
    const ParseResult r = parse_conf(conf);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].detail == "negative numbers are not accepted");
  }
}

TEST_CASE("config: values longer than 80 characters are shortened in diagnostics") {
  const std::string value(200, '7');
  const ParseResult r = parse_conf("max_split_size_mb:" + value);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].value.size() == 80);
  CHECK(r.diagnostics[0].value == std::string(77, '7') + "...");
}

TEST_CASE("config: diagnostics are capped at 64 plus one summary") {
  std::string conf;
  for (int i = 0; i < 100; ++i) conf += "max_split_size_mb:1,";
  const ParseResult r = parse_conf(conf);
  REQUIRE(r.diagnostics.size() == kMaxDiagnostics + 1);
  CHECK(r.diagnostics.back().message() == "cudapool: further 36 diagnostics suppressed");
}

TEST_CASE("config: notes are capped at 64 plus one summary") {
  std::string conf;
  for (int i = 0; i < 70; ++i) conf += "backend:native,";
  const ParseResult r = parse_conf(conf);
  REQUIRE(r.notes.size() == kMaxDiagnostics + 1);
  CHECK(r.notes.back().message() == "cudapool: note: further 6 notes suppressed");
}

// Not a timed test: the time is printed with a failure, and a parse worse than linear would take
// hours on these inputs, which ctest's timeout catches.
TEST_CASE("config: 1 MB inputs give a bounded number of diagnostics") {
  const std::size_t kSize = 1 << 20;
  std::string repeated_bad;
  while (repeated_bad.size() < kSize) repeated_bad += "max_splt_size_mb:10,";
  std::string repeated_good;
  while (repeated_good.size() < kSize) repeated_good += "max_split_size_mb:128,";
  std::string commas(kSize, ',');
  std::string open_brackets(kSize, '[');
  std::string one_word(kSize, 'k');
  std::string long_list = "roundup_power2_divisions:[";
  while (long_list.size() < kSize) long_list += "3:3,";
  std::string near_key;
  while (near_key.size() < kSize) near_key += "expandable_segmentz:True,";

  for (const std::string* conf :
       {&repeated_bad, &repeated_good, &commas, &open_brackets, &one_word, &long_list, &near_key}) {
    const auto start = std::chrono::steady_clock::now();
    const ParseResult r = parse_conf(*conf);
    const auto seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("input starts " << conf->substr(0, 30) << ", took " << seconds << " s");
    CHECK_FALSE(r.diagnostics.empty());
    CHECK(r.diagnostics.size() <= kMaxDiagnostics + 1);
    CHECK(r.notes.size() <= kMaxDiagnostics + 1);
    for (const auto& d : r.diagnostics) CHECK(d.message().size() < 600);
  }
  CHECK(parse_conf(repeated_good).options.max_split_size == 128 * kMiB);
}
