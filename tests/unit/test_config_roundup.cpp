// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_roundup.cpp: roundup_power2_divisions, scalar and list forms, with
// PyTorch 2.11's filling rules.
#include <array>
#include <string>

#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::kRoundupIntervals;
using cudapool::config::parse_conf;
using cudapool::config::ParseResult;
using Table = std::array<std::size_t, kRoundupIntervals>;

Table filled(std::size_t v) {
  Table t{};
  t.fill(v);
  return t;
}

Table divisions(const std::string& value) {
  const ParseResult r = parse_conf("roundup_power2_divisions:" + value);
  std::string messages;
  for (const auto& d : r.diagnostics) messages += d.message() + "\n";
  INFO(value << "\n" << messages);
  CHECK(r.diagnostics.empty());
  return r.options.roundup_power2_divisions;
}

}  // namespace

TEST_CASE("config: roundup_power2_divisions defaults to all zero") {
  CHECK(parse_conf("").options.roundup_power2_divisions == filled(0));
}

TEST_CASE("config: roundup_power2_divisions scalar fills every entry") {
  CHECK(divisions("4") == filled(4));
  CHECK(divisions("1") == filled(1));  // 1 counts as a power of two
  CHECK(divisions("16") == filled(16));
}

TEST_CASE("config: roundup_power2_divisions scalar must be a power of two") {
  const ParseResult r = parse_conf("roundup_power2_divisions:3");
  CHECK(r.options.roundup_power2_divisions == filled(0));
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].kept == "off");
}

TEST_CASE("config: roundup_power2_divisions scalar 0 is rejected") {
  const ParseResult r = parse_conf("roundup_power2_divisions:0");
  CHECK(r.diagnostics.size() == 1);
  CHECK(r.options.roundup_power2_divisions == filled(0));
}

TEST_CASE("config: roundup_power2_divisions list: the first key fills the entries below it") {
  Table want{};
  for (std::size_t i = 0; i <= 8; ++i) want[i] = 1;  // 256 MiB is entry 8
  want[9] = 2;                                       // 512 MiB
  for (std::size_t i = 10; i < kRoundupIntervals; ++i) want[i] = 4;
  CHECK(divisions("[256:1,512:2,>:4]") == want);
}

TEST_CASE("config: roundup_power2_divisions list: later keys set only their own entry") {
  Table want{};
  for (std::size_t i = 0; i <= 6; ++i) want[i] = 8;  // 64 MiB is entry 6
  want[10] = 2;                                      // 1024 MiB
  CHECK(divisions("[64:8,1024:2]") == want);
}

TEST_CASE("config: roundup_power2_divisions list: '>' alone fills from entry 1") {
  Table want = filled(8);
  want[0] = 0;
  CHECK(divisions("[>:8]") == want);
}

TEST_CASE("config: roundup_power2_divisions list: '>' fills after the last integer key") {
  Table want{};
  want[3] = 2;  // 8 MiB is entry 3; 1..4 MiB are filled with 2 as the first key
  want[0] = want[1] = want[2] = 2;
  want[4] = 4;  // 16 MiB
  for (std::size_t i = 5; i < kRoundupIntervals; ++i) want[i] = 1;
  CHECK(divisions("[8:2,16:4,>:1]") == want);
}

TEST_CASE("config: roundup_power2_divisions list: '>' before integer keys follows PyTorch order") {
  // '>' fills [1,16) first; then 256 (the first integer key) fills [0,8] with 2. Reported, as an
  // entry after '>' (test_config_hostile.cpp).
  Table want = filled(4);
  for (std::size_t i = 0; i <= 8; ++i) want[i] = 2;
  const ParseResult r = parse_conf("roundup_power2_divisions:[>:4,256:2]");
  CHECK(r.options.roundup_power2_divisions == want);
  CHECK(r.diagnostics.size() == 1);
}

TEST_CASE("config: roundup_power2_divisions list: keys are clamped to the table") {
  // 1 MiB -> entry 0; 65536 MiB (2^16) -> clamped to entry 15.
  Table want{};
  want[0] = 2;
  want[15] = 8;
  CHECK(divisions("[1:2,65536:8]") == want);
}

TEST_CASE("config: roundup_power2_divisions list: divisions 0 and 1 are accepted") {
  Table want = filled(1);
  want[0] = 0;
  CHECK(divisions("[1:0,>:1]") == want);
}

TEST_CASE("config: roundup_power2_divisions list: one trailing comma and [] are accepted") {
  CHECK(divisions("[256:2,]")[8] == 2);
  CHECK(divisions("[]") == filled(0));
}

TEST_CASE("config: roundup_power2_divisions list applies on top of an earlier value") {
  const ParseResult r = parse_conf("roundup_power2_divisions:4,roundup_power2_divisions:[256:2]");
  Table want = filled(4);
  for (std::size_t i = 0; i <= 8; ++i) want[i] = 2;
  CHECK(r.options.roundup_power2_divisions == want);
  CHECK(r.diagnostics.size() == 1);  // given more than once
}

TEST_CASE("config: roundup_power2_divisions list: divisions not a power of two reject the list") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:3]");
  CHECK(r.options.roundup_power2_divisions == filled(0));
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].value == "[256:3]");
  CHECK(r.diagnostics[0].detail.find("256:3") != std::string::npos);
  CHECK(r.diagnostics[0].kept == "off");
}

TEST_CASE("config: roundup_power2_divisions list: a size not a power of two rejects the list") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:2,300:4]");
  CHECK(r.options.roundup_power2_divisions == filled(0));
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail.find("300:4") != std::string::npos);
}

TEST_CASE("config: roundup_power2_divisions list: size 0 is rejected") {
  CHECK(parse_conf("roundup_power2_divisions:[0:4]").diagnostics.size() == 1);
}

TEST_CASE(
    "config: roundup_power2_divisions list: each bad entry is reported, the earlier value kept") {
  const ParseResult r =
      parse_conf("roundup_power2_divisions:8,roundup_power2_divisions:[3:4,256:5]");
  CHECK(r.options.roundup_power2_divisions == filled(8));
  REQUIRE(r.diagnostics.size() == 2);
  CHECK(r.diagnostics[0].kept == "8");
  CHECK(r.diagnostics[1].kept == "8");
}

TEST_CASE("config: roundup_power2_divisions list: malformed entries are rejected") {
  for (const char* value : {"[256,1]", "[256:]", "[:4]", "[256:1:2]", "[,256:2]", "[256:2,,512:4]",
                            "[,]", "[256:[1]]", "[[256:1]]", "[256:abc]", "[abc:2]", "[256:-2]"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("roundup_power2_divisions:") + value);
    CHECK(r.options.roundup_power2_divisions == filled(0));
    CHECK_FALSE(r.diagnostics.empty());
    CHECK(r.set_keys.empty());
  }
}

TEST_CASE("config: roundup_power2_divisions list not terminated is rejected") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:1,512:2");
  CHECK(r.options.roundup_power2_divisions == filled(0));
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "list not terminated (missing ']')");
  CHECK(r.diagnostics[0].value == "[256:1,512:2");
}

TEST_CASE("config: roundup_power2_divisions list followed by text is rejected") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:1]x,strict:True");
  CHECK(r.options.roundup_power2_divisions == filled(0));
  CHECK(r.options.strict);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "unexpected text after ']'");
}

TEST_CASE("config: roundup_power2_divisions nested list message names the entry") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:[1]]");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail.find("nested '['") != std::string::npos);
}
