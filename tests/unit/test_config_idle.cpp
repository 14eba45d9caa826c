// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_idle.cpp: the idle-release keys idle_release_ms and
// idle_release_floor_mb: what they accept, what they reject (with a message, the default kept)
// and how describe() renders them. Not here: what the pool does with them
// (test_pool_idle_clock.cpp), the replay (test_replay_idle.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "config/describe.h"
#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::describe;
using cudapool::config::parse_conf;
using cudapool::config::ParseResult;

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string rendered(const std::string& conf, const std::string& name) {
  for (const auto& s : describe(parse_conf(conf))) {
    if (s.name == name) return s.value + " (" + s.origin + ")";
  }
  return "(absent)";
}

}  // namespace

TEST_CASE("config idle: both keys are off by default") {
  const ParseResult r = parse_conf("");
  CHECK(r.options.idle_release_ms == 0);
  CHECK(r.options.idle_release_floor == 0);
  CHECK(rendered("", "idle_release_ms") == "off (default)");
  CHECK(rendered("", "idle_release_floor_mb") == "0 (default)");
}

TEST_CASE("config idle: idle_release_ms takes 0 to 3600000 milliseconds") {
  for (const auto& [text, ms] : {std::pair<const char*, std::uint64_t>{"0", 0},
                                 {"1", 1},
                                 {"100", 100},
                                 {"3600000", 3600000}}) {
    INFO(text);
    const ParseResult r = parse_conf(std::string("idle_release_ms:") + text);
    CHECK(r.diagnostics.empty());
    CHECK(r.options.idle_release_ms == ms);
  }
  CHECK(rendered("idle_release_ms:250", "idle_release_ms") == "250 (conf)");
  CHECK(rendered("idle_release_ms:0", "idle_release_ms") == "off (conf)");
}

TEST_CASE("config idle: idle_release_ms out of range or not a number is rejected, off kept") {
  for (const char* value : {"-1", "3600001", "abc", "1.5", "99999999999999999999999", "100ms"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("idle_release_ms:") + value);
    CHECK(r.options.idle_release_ms == 0);
    REQUIRE(r.diagnostics.size() == 1);
    const auto& d = r.diagnostics[0];
    CHECK(d.key == "idle_release_ms");
    CHECK(d.value == value);
    CHECK(d.kept == "off");
    CHECK(d.accepted == "an integer from 0 (off) to 3600000 (milliseconds)");
    CHECK(d.message().find("cudapool: Invalid conf pair: idle_release_ms:" + std::string(value)) ==
          0);
    CHECK(d.message().find("keeping: off") != std::string::npos);
    CHECK(rendered(std::string("idle_release_ms:") + value, "idle_release_ms") == "off (default)");
  }
  // A rejected value keeps the one given before it.
  const ParseResult r = parse_conf("idle_release_ms:100,idle_release_ms:3600001");
  CHECK(r.options.idle_release_ms == 100);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].kept == "100");
}

TEST_CASE("config idle: idle_release_floor_mb takes whole MiB") {
  const ParseResult r = parse_conf("idle_release_ms:100,idle_release_floor_mb:512");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.idle_release_ms == 100);
  CHECK(r.options.idle_release_floor == 512 * kMiB);
  CHECK(rendered("idle_release_floor_mb:512", "idle_release_floor_mb") == "512 (conf)");
  CHECK(parse_conf("idle_release_floor_mb:0").options.idle_release_floor == 0);
}

TEST_CASE("config idle: idle_release_floor_mb rejects what is not a whole MiB count") {
  for (const char* value : {"-1", "abc", "1.5", "99999999999999999999999", "17592186044416"}) {
    INFO(value);
    const ParseResult r = parse_conf(std::string("idle_release_floor_mb:") + value);
    CHECK(r.options.idle_release_floor == 0);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].key == "idle_release_floor_mb");
    CHECK(r.diagnostics[0].kept == "0");
    CHECK(r.diagnostics[0].accepted == "an integer >= 0 (MiB)");
    CHECK_FALSE(r.diagnostics[0].message().empty());
  }
}
