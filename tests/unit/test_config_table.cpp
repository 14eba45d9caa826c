// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_table.cpp: the key table is consistent and its lookups work.
#include <set>
#include <string>

#include "config/keys.h"
#include "tests/unit/catch.h"

using cudapool::config::closest_key;
using cudapool::config::find_key;
using cudapool::config::key_table;
using cudapool::config::Options;

TEST_CASE("config: key table names and aliases are unique") {
  std::set<std::string> seen;
  for (const auto& key : key_table()) {
    CHECK(seen.insert(std::string(key.name)).second);
    if (!key.alias.empty()) CHECK(seen.insert(std::string(key.alias)).second);
  }
  CHECK(seen.size() >= 16);
}

TEST_CASE("config: key table rows are complete") {
  for (const auto& key : key_table()) {
    INFO(key.name);
    CHECK_FALSE(key.name.empty());
    CHECK_FALSE(key.accepted.empty());
    CHECK_FALSE(key.default_text.empty());
    CHECK(key.apply != nullptr);
    CHECK(key.render != nullptr);
  }
}

TEST_CASE("config: each cudapool key renders its default as the table's default text") {
  const Options defaults;
  for (const auto& key : key_table()) {
    INFO(key.name);
    if (key.pytorch_only) {
      CHECK(key.render(defaults) == "ignored");
    } else {
      CHECK(key.render(defaults) == key.default_text);
    }
  }
}

TEST_CASE("config: the PyTorch-only flag is set on exactly the keys cudapool ignores") {
  std::set<std::string> pytorch_only;
  for (const auto& key : key_table()) {
    if (key.pytorch_only) pytorch_only.insert(std::string(key.name));
  }
  CHECK(pytorch_only == std::set<std::string>{
                            "backend", "pinned_use_cuda_host_register",
                            "pinned_num_register_threads", "pinned_use_background_threads",
                            "pinned_reserve_segment_size_mb", "graph_capture_record_stream_reuse"});
}

TEST_CASE("config: only roundup_power2_divisions accepts a list") {
  for (const auto& key : key_table()) {
    INFO(key.name);
    CHECK(cudapool::config::accepts_list(key.kind) == (key.name == "roundup_power2_divisions"));
  }
}

TEST_CASE("config: find_key finds names and aliases, case-sensitively") {
  REQUIRE(find_key("max_split_size_mb") != nullptr);
  CHECK(find_key("max_split_size_mb")->name == "max_split_size_mb");
  REQUIRE(find_key("release_lock_on_hipmalloc") != nullptr);
  CHECK(find_key("release_lock_on_hipmalloc")->name == "release_lock_on_cudamalloc");
  CHECK(find_key("MAX_SPLIT_SIZE_MB") == nullptr);
  CHECK(find_key("") == nullptr);
  CHECK(find_key("max_split_size_mb ") == nullptr);
}

TEST_CASE("config: closest_key suggests within edit distance 3 and ignores letter case") {
  CHECK(closest_key("max_split_size") == "max_split_size_mb");
  CHECK(closest_key("expandable_segment") == "expandable_segments");
  CHECK(closest_key("STRICT") == "strict");
  CHECK(closest_key("release_lock_on_hipmaloc") == "release_lock_on_cudamalloc");
  CHECK(closest_key("nothing_like_it") == "");
  CHECK(closest_key(std::string(100000, 'x')) == "");
}

TEST_CASE("config: a failed apply leaves options untouched") {
  for (const auto& key : key_table()) {
    INFO(key.name);
    Options options;
    options.max_split_size = 123;
    options.strict = true;
    cudapool::config::RawValue value;
    value.word = "not-a-valid-value";
    cudapool::config::Problems problems;
    key.apply(value, options, problems);
    CHECK_FALSE(problems.empty());
    CHECK(options.max_split_size == 123);
    CHECK(options.strict);
  }
}
