// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_describe.cpp: describe(): one effective setting per key, in user units.
#include <string>

#include "config/describe.h"
#include "config/keys.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::describe;
using cudapool::config::EffectiveSetting;
using cudapool::config::parse_conf;

// The setting called `name`, or one with name "(absent)".
EffectiveSetting find(const std::vector<EffectiveSetting>& settings, const std::string& name) {
  for (const auto& s : settings) {
    if (s.name == name) return s;
  }
  return {"(absent)", "", ""};
}

std::string value_of(const std::string& conf, const std::string& name) {
  return find(describe(parse_conf(conf)), name).value;
}

}  // namespace

TEST_CASE("config: describe lists every cudapool key in table order with defaults") {
  const auto settings = describe(parse_conf(""));
  std::vector<std::string> names;
  for (const auto& key : cudapool::config::key_table()) {
    if (!key.pytorch_only) names.emplace_back(key.name);
  }
  REQUIRE(settings.size() == names.size());
  for (std::size_t i = 0; i < settings.size(); ++i) {
    CHECK(settings[i].name == names[i]);
    CHECK(settings[i].origin == "default");
  }
  CHECK(find(settings, "max_split_size_mb").value == "unlimited");
  CHECK(find(settings, "max_non_split_rounding_mb").value == "20");
  CHECK(find(settings, "garbage_collection_threshold").value == "off");
  CHECK(find(settings, "roundup_power2_divisions").value == "off");
  CHECK(find(settings, "expandable_segments").value == "False");
  CHECK(find(settings, "per_process_memory_fraction").value == "1");
  CHECK(find(settings, "release_lock_on_cudamalloc").value == "False");
  CHECK(find(settings, "large_segment_size_mb").value == "20");
  CHECK(find(settings, "reuse_fence").value == "auto");
  CHECK(find(settings, "thread_cache").value == "auto");
  CHECK(find(settings, "strict").value == "False");
}

TEST_CASE("config: describe marks keys taken from the string with origin conf") {
  const auto settings = describe(parse_conf("max_split_size_mb:128,expandable_segments:True"));
  CHECK(find(settings, "max_split_size_mb").value == "128");
  CHECK(find(settings, "max_split_size_mb").origin == "conf");
  CHECK(find(settings, "expandable_segments").value == "True");
  CHECK(find(settings, "expandable_segments").origin == "conf");
  CHECK(find(settings, "strict").origin == "default");
}

TEST_CASE("config: describe keeps origin default for a key whose value was rejected") {
  const auto s = find(describe(parse_conf("max_split_size_mb:10")), "max_split_size_mb");
  CHECK(s.value == "unlimited");
  CHECK(s.origin == "default");
}

TEST_CASE("config: describe shows PyTorch-only keys only when given, as ignored") {
  CHECK(find(describe(parse_conf("")), "backend").name == "(absent)");
  const auto s = find(describe(parse_conf("backend:native")), "backend");
  CHECK(s.value == "ignored");
  CHECK(s.origin == "conf");
  CHECK(find(describe(parse_conf("backend:bogus")), "backend").name == "(absent)");
}

TEST_CASE("config: describe renders fractions as given") {
  CHECK(value_of("garbage_collection_threshold:0.6", "garbage_collection_threshold") == "0.6");
  CHECK(value_of("per_process_memory_fraction:0.75", "per_process_memory_fraction") == "0.75");
  CHECK(value_of("per_process_memory_fraction:0", "per_process_memory_fraction") == "0");
}

TEST_CASE("config: describe renders roundup_power2_divisions as off, a number, or a list") {
  CHECK(value_of("roundup_power2_divisions:1", "roundup_power2_divisions") == "off");
  CHECK(value_of("roundup_power2_divisions:[1:0,>:1]", "roundup_power2_divisions") == "off");
  CHECK(value_of("roundup_power2_divisions:8", "roundup_power2_divisions") == "8");
  CHECK(value_of("roundup_power2_divisions:[256:1,512:2,>:4]", "roundup_power2_divisions") ==
        "[256:1,512:2,>:4]");
  CHECK(value_of("roundup_power2_divisions:[>:8]", "roundup_power2_divisions") == "[1:0,>:8]");
  CHECK(value_of("roundup_power2_divisions:[1:4,4:8,16:2]", "roundup_power2_divisions") ==
        "[1:4,2:0,4:8,8:0,16:2,>:0]");
}

TEST_CASE("config: describe's roundup list reads back to the same table") {
  for (const char* conf :
       {"[256:1,512:2,>:4]", "[>:8]", "[1:4,4:8,16:2]", "[64:8,1024:2]", "[32768:4]",
        "[1:2,2:4,4:8,8:16,16:32,32:64,64:128,128:256,256:512,512:1024,1024:2048,2048:4096,"
        "4096:8192,8192:16384,16384:32768,>:65536]"}) {
    INFO(conf);
    const auto first = parse_conf(std::string("roundup_power2_divisions:") + conf);
    REQUIRE(first.diagnostics.empty());
    const std::string rendered =
        value_of(std::string("roundup_power2_divisions:") + conf, "roundup_power2_divisions");
    const auto again = parse_conf("roundup_power2_divisions:" + rendered);
    INFO(rendered);
    REQUIRE(again.diagnostics.empty());
    CHECK(again.options.roundup_power2_divisions == first.options.roundup_power2_divisions);
  }
}

TEST_CASE("config: describe renders MiB keys in MiB and reuse_fence by name") {
  CHECK(value_of("max_non_split_rounding_mb:64", "max_non_split_rounding_mb") == "64");
  CHECK(value_of("large_segment_size_mb:32", "large_segment_size_mb") == "32");
  CHECK(value_of("reuse_fence:none", "reuse_fence") == "none");
  CHECK(value_of("release_lock_on_hipmalloc:True", "release_lock_on_cudamalloc") == "True");
}

TEST_CASE("config: describe renders thread_cache by name, with its origin") {
  CHECK(value_of("thread_cache:auto", "thread_cache") == "auto");
  CHECK(value_of("thread_cache:always", "thread_cache") == "always");
  CHECK(value_of("thread_cache:never", "thread_cache") == "never");
  const auto given = find(describe(parse_conf("thread_cache:always")), "thread_cache");
  CHECK(given.origin == "conf");
  const auto rejected = find(describe(parse_conf("thread_cache:maybe")), "thread_cache");
  CHECK(rejected.value == "auto");
  CHECK(rejected.origin == "default");
}
