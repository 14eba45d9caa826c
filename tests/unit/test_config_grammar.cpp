// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_grammar.cpp: pairs, separators, whitespace and defaults in parse_conf.
#include <string>

#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::kMiB;
using cudapool::config::Options;
using cudapool::config::parse_conf;
using cudapool::config::ParseResult;

bool same_options(const Options& a, const Options& b) {
  return a.max_split_size == b.max_split_size &&
         a.max_non_split_rounding == b.max_non_split_rounding &&
         a.roundup_power2_divisions == b.roundup_power2_divisions &&
         a.garbage_collection_threshold == b.garbage_collection_threshold &&
         a.expandable_segments == b.expandable_segments &&
         a.per_process_memory_fraction == b.per_process_memory_fraction &&
         a.release_lock_on_cudamalloc == b.release_lock_on_cudamalloc &&
         a.large_segment_size == b.large_segment_size && a.reuse_fence == b.reuse_fence &&
         a.thread_cache == b.thread_cache && a.strict == b.strict;
}

}  // namespace

TEST_CASE("config: empty string gives all defaults and no diagnostics") {
  const ParseResult r = parse_conf("");
  CHECK(r.diagnostics.empty());
  CHECK(r.notes.empty());
  CHECK(r.set_keys.empty());
  CHECK(same_options(r.options, Options{}));
}

TEST_CASE("config: whitespace-only string gives all defaults and no diagnostics") {
  const ParseResult r = parse_conf(" \t\n ");
  CHECK(r.diagnostics.empty());
  CHECK(same_options(r.options, Options{}));
}

TEST_CASE("config: several pairs separated by commas all apply") {
  const ParseResult r =
      parse_conf("max_split_size_mb:128,expandable_segments:True,per_process_memory_fraction:0.5");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.max_split_size == 128 * kMiB);
  CHECK(r.options.expandable_segments);
  CHECK(r.options.per_process_memory_fraction == Approx(0.5));
  CHECK(r.set_keys == std::vector<std::string>{"max_split_size_mb", "expandable_segments",
                                               "per_process_memory_fraction"});
}

TEST_CASE("config: whitespace is dropped inside keys and values, as PyTorch does") {
  const ParseResult r = parse_conf("  max_split _size_mb : 1 28 , expandable_segments: True ");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.max_split_size == 128 * kMiB);
  CHECK(r.options.expandable_segments);
}

TEST_CASE("config: a space splitting a key name does not make two keys") {
  // "max split_size_mb" reads as "maxsplit_size_mb": an unknown key, not max_split_size_mb.
  const ParseResult r = parse_conf("max split_size_mb:128");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].key == "maxsplit_size_mb");
  CHECK(r.options.max_split_size == Options{}.max_split_size);
}

TEST_CASE("config: keys are case-sensitive") {
  const ParseResult r = parse_conf("Max_Split_Size_MB:128");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail.find("unknown key") != std::string::npos);
  CHECK(r.diagnostics[0].detail.find("max_split_size_mb") != std::string::npos);
  CHECK(r.options.max_split_size == Options{}.max_split_size);
}

TEST_CASE("config: one trailing comma is accepted silently, as PyTorch does") {
  const ParseResult r = parse_conf("max_split_size_mb:128,");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.max_split_size == 128 * kMiB);
}

TEST_CASE("config: stray commas give one diagnostic each and the pair still applies") {
  // The leading comma and the second trailing one are stray; a single trailing one is not.
  const ParseResult r = parse_conf(",max_split_size_mb:128,,");
  CHECK(r.options.max_split_size == 128 * kMiB);
  REQUIRE(r.diagnostics.size() == 2);
  for (const auto& d : r.diagnostics) {
    CHECK(d.value == ",");
    CHECK(d.detail.find("stray ','") != std::string::npos);
  }
}

TEST_CASE("config: commas between pairs, doubled, give one diagnostic per extra comma") {
  const ParseResult r = parse_conf("max_split_size_mb:128,,,expandable_segments:True");
  CHECK(r.diagnostics.size() == 2);
  CHECK(r.options.max_split_size == 128 * kMiB);
  CHECK(r.options.expandable_segments);
}

TEST_CASE("config: a lone comma is one stray comma") {
  CHECK(parse_conf(",").diagnostics.size() == 1);
}

TEST_CASE("config: a bad pair does not stop the pairs after it") {
  const ParseResult r =
      parse_conf("max_split_size_mb:10,expandable_segments:True,bogus:1,strict:True");
  CHECK(r.diagnostics.size() == 2);
  CHECK(r.options.expandable_segments);
  CHECK(r.options.strict);
}

TEST_CASE("config: a list value's commas do not split pairs") {
  const ParseResult r = parse_conf("roundup_power2_divisions:[256:1,512:2,>:4],strict:True");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.strict);
  CHECK(r.options.roundup_power2_divisions[9] == 2);
}

TEST_CASE("config: every parse starts from defaults") {
  (void)parse_conf(
      "max_split_size_mb:128,roundup_power2_divisions:4,garbage_collection_threshold:0.5");
  const ParseResult r = parse_conf("expandable_segments:True");
  CHECK(r.options.max_split_size == Options{}.max_split_size);
  CHECK(r.options.roundup_power2_divisions == Options{}.roundup_power2_divisions);
  CHECK(r.options.garbage_collection_threshold == 0.0);
}

TEST_CASE("config: a key given twice keeps the last value and says so") {
  const ParseResult r = parse_conf("max_split_size_mb:128,max_split_size_mb:256");
  CHECK(r.options.max_split_size == 256 * kMiB);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].key == "max_split_size_mb");
  CHECK(r.diagnostics[0].value == "256");
  CHECK(r.diagnostics[0].detail == "given more than once; the last value is used");
  CHECK(r.diagnostics[0].kept == "256");
  CHECK(r.set_keys == std::vector<std::string>{"max_split_size_mb"});
}

TEST_CASE("config: a key given twice with a bad last value keeps the last valid value") {
  const ParseResult r = parse_conf("max_split_size_mb:128,max_split_size_mb:10");
  CHECK(r.options.max_split_size == 128 * kMiB);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].value == "10");
  CHECK(r.diagnostics[0].kept == "128");
}

TEST_CASE("config: a key and its alias count as the same key given twice") {
  const ParseResult r =
      parse_conf("release_lock_on_cudamalloc:True,release_lock_on_hipmalloc:False");
  CHECK_FALSE(r.options.release_lock_on_cudamalloc);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].detail == "given more than once; the last value is used");
}
