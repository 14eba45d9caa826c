// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_sizes.cpp: the integer MiB keys: max_split_size_mb,
// max_non_split_rounding_mb and large_segment_size_mb (with its limit, and its page rule under
// expandable segments).
#include <cstdint>
#include <limits>
#include <string>

#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::Diagnostic;
using cudapool::config::kMiB;
using cudapool::config::Options;
using cudapool::config::parse_conf;
using cudapool::config::ParseResult;

constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();

}  // namespace

TEST_CASE("config: max_split_size_mb is stored in bytes") {
  const ParseResult r = parse_conf("max_split_size_mb:128");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.max_split_size == 128 * kMiB);
  CHECK(r.set_keys == std::vector<std::string>{"max_split_size_mb"});
}

TEST_CASE("config: max_split_size_mb defaults to unlimited") {
  CHECK(Options{}.max_split_size == kSizeMax);
  CHECK(parse_conf("strict:False").options.max_split_size == kSizeMax);
}

TEST_CASE("config: max_split_size_mb accepts exactly 20") {
  const ParseResult r = parse_conf("max_split_size_mb:20");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.max_split_size == 20 * kMiB);
}

TEST_CASE("config: max_split_size_mb below 20 is rejected and the default kept") {
  const ParseResult r = parse_conf("max_split_size_mb:19");
  CHECK(r.options.max_split_size == kSizeMax);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].key == "max_split_size_mb");
  CHECK(r.diagnostics[0].value == "19");
  CHECK(r.diagnostics[0].accepted == "an integer >= 20 (MiB)");
  CHECK(r.diagnostics[0].kept == "unlimited");
  CHECK(r.set_keys.empty());
}

TEST_CASE("config: max_split_size_mb of 0 is rejected") {
  const ParseResult r = parse_conf("max_split_size_mb:0");
  CHECK(r.diagnostics.size() == 1);
  CHECK(r.options.max_split_size == kSizeMax);
}

TEST_CASE("config: max_split_size_mb above SIZE_MAX / MiB is rejected, where PyTorch caps it") {
  // More in test_config_hostile.cpp (issue 18).
  const ParseResult r = parse_conf("max_split_size_mb:18446744073709551615");
  CHECK(r.diagnostics.size() == 1);
  CHECK(r.options.max_split_size == kSizeMax);
  CHECK(parse_conf("max_split_size_mb:17592186044415").options.max_split_size ==
        (kSizeMax / kMiB) * kMiB);
}

TEST_CASE("config: max_split_size_mb that does not fit in size_t is rejected") {
  const ParseResult r = parse_conf("max_split_size_mb:99999999999999999999999");
  CHECK(r.options.max_split_size == kSizeMax);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail.find("64 bits") != std::string::npos);
}

TEST_CASE("config: max_split_size_mb accepts a leading '+' and leading zeros, as stoull does") {
  CHECK(parse_conf("max_split_size_mb:+64").options.max_split_size == 64 * kMiB);
  CHECK(parse_conf("max_split_size_mb:0064").options.max_split_size == 64 * kMiB);
}

TEST_CASE("config: max_non_split_rounding_mb is stored in bytes with a default of 20 MiB") {
  CHECK(Options{}.max_non_split_rounding == 20 * kMiB);
  const ParseResult r = parse_conf("max_non_split_rounding_mb:512");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.max_non_split_rounding == 512 * kMiB);
}

TEST_CASE("config: max_non_split_rounding_mb below 20 is rejected and 20 kept") {
  const ParseResult r = parse_conf("max_non_split_rounding_mb:8");
  CHECK(r.options.max_non_split_rounding == 20 * kMiB);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].kept == "20");
  CHECK(r.diagnostics[0].accepted == "an integer >= 20 (MiB)");
}

TEST_CASE("config: max_non_split_rounding_mb above SIZE_MAX / MiB is rejected and 20 kept") {
  const ParseResult r = parse_conf("max_non_split_rounding_mb:17592186044417");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].kept == "20");
  CHECK(r.options.max_non_split_rounding == 20 * kMiB);
}

TEST_CASE("config: large_segment_size_mb is stored in bytes and must be above 10, as PyTorch") {
  CHECK(Options{}.large_segment_size == 20 * kMiB);
  CHECK(parse_conf("large_segment_size_mb:64").options.large_segment_size == 64 * kMiB);
  const ParseResult r = parse_conf("large_segment_size_mb:11");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.large_segment_size == 11 * kMiB);
  const ParseResult ten = parse_conf("large_segment_size_mb:10");
  CHECK(ten.options.large_segment_size == 20 * kMiB);
  CHECK(ten.diagnostics.size() == 1);
}

TEST_CASE("config: large_segment_size_mb above 1 TiB is rejected with the limit, 20 kept") {
  // Issue 26 item 8: with expandable segments a value above 2^43 MiB made every allocation fail
  // with CUDA_ERROR_INVALID_VALUE, silently; any value above a device's memory only fails.
  CHECK(parse_conf("large_segment_size_mb:1048576").options.large_segment_size ==
        std::size_t{1048576} * kMiB);
  for (const char* value : {"1048577", "8796093022209", "17592186044415"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("large_segment_size_mb:") + value);
    CHECK(r.options.large_segment_size == 20 * kMiB);
    REQUIRE(r.diagnostics.size() == 1);
    const Diagnostic& d = r.diagnostics[0];
    CHECK(d.key == "large_segment_size_mb");
    CHECK(d.value == value);
    CHECK(d.accepted == "an integer from 11 to 1048576 (MiB), even with expandable_segments:True");
    CHECK(d.kept == "20");
    CHECK(d.detail ==
          "more than any device's memory: every segment this large would fail (at most 1048576 "
          "MiB, 1 TiB)");
  }
}

TEST_CASE("config: with expandable segments an odd large_segment_size_mb is rejected, 20 kept") {
  // The value is then the large pool's page, which the driver maps in 2 MiB pages only: 11 MiB
  // pages made every large allocation fail with CUDA_ERROR_INVALID_VALUE, silently.
  for (const char* conf : {"expandable_segments:True,large_segment_size_mb:11",
                           "large_segment_size_mb:11,expandable_segments:True"}) {
    INFO(conf);
    const ParseResult r = parse_conf(conf);
    CHECK(r.options.large_segment_size == 20 * kMiB);
    CHECK(r.options.expandable_segments);
    REQUIRE(r.diagnostics.size() == 1);
    const Diagnostic& d = r.diagnostics[0];
    CHECK(d.key == "large_segment_size_mb");
    CHECK(d.value == "11");
    CHECK(d.kept == "20");
    CHECK(d.detail.find("pages of 2 MiB") != std::string::npos);
    CHECK(d.message() ==
          "cudapool: Invalid conf pair: large_segment_size_mb:11 (with expandable_segments:True it "
          "is the page size, and the driver maps memory in pages of 2 MiB: an even number of MiB; "
          "accepted: an integer from 11 to 1048576 (MiB), even with expandable_segments:True; "
          "keeping: 20)");
  }
  CHECK(parse_conf("large_segment_size_mb:11").diagnostics.empty());
  CHECK(parse_conf("expandable_segments:False,large_segment_size_mb:11").diagnostics.empty());
  const ParseResult even = parse_conf("expandable_segments:True,large_segment_size_mb:12");
  CHECK(even.diagnostics.empty());
  CHECK(even.options.large_segment_size == 12 * kMiB);
}

TEST_CASE("config: large_segment_size_mb of 0 is rejected and 20 kept") {
  const ParseResult r = parse_conf("large_segment_size_mb:0");
  CHECK(r.options.large_segment_size == 20 * kMiB);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].kept == "20");
}

TEST_CASE("config: integer MiB keys reject fractions, exponents and trailing text") {
  for (const char* value : {"1e3", "128.0", "12abc", "abc", "0x40", "+", "++64", "+-64"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("max_split_size_mb:") + value);
    CHECK(r.options.max_split_size == kSizeMax);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].detail == "not an integer");
  }
}

TEST_CASE("config: integer MiB keys reject negative numbers") {
  const ParseResult r = parse_conf("max_non_split_rounding_mb:-64");
  CHECK(r.options.max_non_split_rounding == 20 * kMiB);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "negative numbers are not accepted");
}
