// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_scalars.cpp: garbage_collection_threshold, per_process_memory_fraction,
// the boolean keys and cudapool's reuse_fence and thread_cache.
#include <string>
#include <utility>

#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::parse_conf;
using cudapool::config::ParseResult;
using cudapool::config::ReuseFence;
using cudapool::config::ThreadCacheMode;

bool mentions(const ParseResult& r, const std::string& text) {
  for (const auto& n : r.notes) {
    if (n.text.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("config: garbage_collection_threshold inside (0, 1) is taken") {
  const ParseResult r =
      parse_conf("garbage_collection_threshold:0.6,per_process_memory_fraction:0.9");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.garbage_collection_threshold == Approx(0.6));
  CHECK(r.notes.empty());
}

TEST_CASE("config: garbage_collection_threshold accepts scientific notation") {
  CHECK(parse_conf("garbage_collection_threshold:5e-1").options.garbage_collection_threshold ==
        Approx(0.5));
}

TEST_CASE("config: garbage_collection_threshold of 0 or 1 or beyond is rejected and off kept") {
  for (const char* value : {"0", "1", "0.0", "1.0", "-0.5", "1.5", "nan", "inf"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("garbage_collection_threshold:") + value);
    CHECK(r.options.garbage_collection_threshold == 0.0);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].kept == "off");
    CHECK(r.diagnostics[0].accepted == "a number greater than 0 and less than 1");
  }
}

TEST_CASE("config: garbage_collection_threshold rejects text that is not a number") {
  for (const char* value : {"abc", "0.5x", "0,5", ".", "1e999"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("garbage_collection_threshold:") + value);
    CHECK(r.options.garbage_collection_threshold == 0.0);
    CHECK_FALSE(r.diagnostics.empty());
  }
}

TEST_CASE("config: garbage_collection_threshold without a memory fraction below 1 gets a note") {
  const ParseResult r = parse_conf("garbage_collection_threshold:0.6");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.garbage_collection_threshold == Approx(0.6));
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].key == "garbage_collection_threshold");
  CHECK(r.notes[0].message() ==
        "cudapool: note: garbage_collection_threshold:0.6 has no effect while "
        "per_process_memory_fraction is 1 (PyTorch collects only under a memory fraction below "
        "1)");
  CHECK(mentions(parse_conf("garbage_collection_threshold:0.6,per_process_memory_fraction:1"),
                 "has no effect"));
}

TEST_CASE("config: per_process_memory_fraction accepts 0 and 1 inclusive") {
  CHECK(parse_conf("per_process_memory_fraction:0").options.per_process_memory_fraction == 0.0);
  CHECK(parse_conf("per_process_memory_fraction:1").options.per_process_memory_fraction == 1.0);
  const ParseResult r = parse_conf("per_process_memory_fraction:0.25");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.per_process_memory_fraction == Approx(0.25));
}

TEST_CASE("config: per_process_memory_fraction outside [0, 1] is rejected and 1 kept") {
  for (const char* value : {"1.01", "-0.1", "2", "abc"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("per_process_memory_fraction:") + value);
    CHECK(r.options.per_process_memory_fraction == 1.0);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].kept == "1");
  }
}

TEST_CASE("config: boolean keys take exactly True and False") {
  const ParseResult r =
      parse_conf("expandable_segments:True,release_lock_on_cudamalloc:True,strict:True");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.expandable_segments);
  CHECK(r.options.release_lock_on_cudamalloc);
  CHECK(r.options.strict);
  const ParseResult off = parse_conf("expandable_segments:True,expandable_segments:False");
  CHECK_FALSE(off.options.expandable_segments);
}

TEST_CASE("config: release_lock_on_hipmalloc is an alias of release_lock_on_cudamalloc") {
  const ParseResult r = parse_conf("release_lock_on_hipmalloc:True");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.release_lock_on_cudamalloc);
  CHECK(r.set_keys == std::vector<std::string>{"release_lock_on_cudamalloc"});
}

TEST_CASE("config: lowercase true and false are rejected with a hint and False kept") {
  for (const char* value : {"true", "false", "TRUE"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("expandable_segments:") + value);
    CHECK_FALSE(r.options.expandable_segments);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].detail == "write True or False, with a capital first letter");
    CHECK(r.diagnostics[0].kept == "False");
  }
}

TEST_CASE("config: other boolean spellings are rejected") {
  for (const char* value : {"1", "0", "yes", "on", "Truee"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("strict:") + value);
    CHECK_FALSE(r.options.strict);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].accepted == "True or False");
  }
}

TEST_CASE("config: reuse_fence takes auto, sync or none") {
  CHECK(parse_conf("").options.reuse_fence == ReuseFence::kAuto);
  CHECK(parse_conf("reuse_fence:sync").options.reuse_fence == ReuseFence::kSync);
  CHECK(parse_conf("reuse_fence:none").options.reuse_fence == ReuseFence::kNone);
  CHECK(parse_conf("reuse_fence:sync,reuse_fence:auto").options.reuse_fence == ReuseFence::kAuto);
}

TEST_CASE("config: reuse_fence rejects other words and keeps auto") {
  const ParseResult r = parse_conf("reuse_fence:Sync");
  CHECK(r.options.reuse_fence == ReuseFence::kAuto);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].accepted == "auto, sync or none");
  CHECK(r.diagnostics[0].kept == "auto");
}

TEST_CASE("config: thread_cache defaults to auto and takes auto, always or never") {
  CHECK(parse_conf("").options.thread_cache == ThreadCacheMode::kAuto);
  for (const auto& [word, mode] :
       {std::pair{"auto", ThreadCacheMode::kAuto}, std::pair{"always", ThreadCacheMode::kAlways},
        std::pair{"never", ThreadCacheMode::kNever}}) {
    INFO(word);
    const ParseResult r = parse_conf(std::string("thread_cache:") + word);
    CHECK(r.diagnostics.empty());
    CHECK(r.options.thread_cache == mode);
    CHECK(r.options.reuse_fence == ReuseFence::kAuto);  // keys stay apart
  }
  CHECK(parse_conf("thread_cache:never,thread_cache:auto").options.thread_cache ==
        ThreadCacheMode::kAuto);
  const ParseResult both = parse_conf("reuse_fence:auto,thread_cache:always");
  CHECK(both.diagnostics.empty());
  CHECK(both.options.thread_cache == ThreadCacheMode::kAlways);
  CHECK(both.options.reuse_fence == ReuseFence::kAuto);
}

TEST_CASE("config: thread_cache rejects other words with one diagnostic and keeps auto") {
  for (const char* value : {"maybe", "Always", "NEVER", "true", "1", ""}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("thread_cache:") + value);
    CHECK(r.options.thread_cache == ThreadCacheMode::kAuto);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].key == "thread_cache");
    CHECK(r.diagnostics[0].accepted == "auto, always or never");
    CHECK(r.diagnostics[0].kept == "auto");
  }
  const ParseResult r = parse_conf("thread_cache:maybe");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].value == "maybe");
  const std::string message = r.diagnostics[0].message();
  CHECK(message.find("thread_cache:maybe") != std::string::npos);
  CHECK(message.find("auto, always or never") != std::string::npos);
}

TEST_CASE("config: a rejected thread_cache leaves an earlier one in force") {
  const ParseResult r = parse_conf("thread_cache:never,thread_cache:maybe");
  CHECK(r.options.thread_cache == ThreadCacheMode::kNever);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].kept == "never");
}
