// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_handles.cpp: the key expandable_handle_mb (the size of the driver
// allocations that back expandable segments' large-pool pages): what it accepts, what it rejects
// (with a message, the default kept), its note without expandable segments, and how describe()
// renders it. Not here: what the pool does with it (test_pool_handles.cpp).
#include <cstddef>
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

std::string rendered(const std::string& conf) {
  for (const auto& s : describe(parse_conf(conf))) {
    if (s.name == "expandable_handle_mb") return s.value + " (" + s.origin + ")";
  }
  return "(absent)";
}

}  // namespace

TEST_CASE("config handles: expandable_handle_mb is 0 (one handle per page) by default") {
  CHECK(parse_conf("").options.expandable_handle == 0);
  CHECK(rendered("") == "0 (default)");
}

TEST_CASE("config handles: expandable_handle_mb takes 0 to 1048576 MiB") {
  for (const auto& [text, mib] : {std::pair<const char*, std::size_t>{"0", 0},
                                  {"20", 20},
                                  {"256", 256},
                                  {"1048576", 1048576}}) {
    INFO(text);
    const ParseResult r =
        parse_conf(std::string("expandable_segments:True,expandable_handle_mb:") + text);
    CHECK(r.diagnostics.empty());
    CHECK(r.notes.empty());
    CHECK(r.options.expandable_handle == mib * kMiB);
  }
  CHECK(rendered("expandable_segments:True,expandable_handle_mb:256") == "256 (conf)");
}

TEST_CASE("config handles: expandable_handle_mb out of range or not a number is rejected") {
  for (const char* value : {"-1", "abc", "1.5", "1048577", "99999999999999999999999", "256mb"}) {
    INFO(value);
    const ParseResult r =
        parse_conf(std::string("expandable_segments:True,expandable_handle_mb:") + value);
    CHECK(r.options.expandable_handle == 0);
    REQUIRE(r.diagnostics.size() == 1);
    const auto& d = r.diagnostics[0];
    CHECK(d.key == "expandable_handle_mb");
    CHECK(d.value == value);
    CHECK(d.kept == "0");
    CHECK(d.accepted == "an integer from 0 (one handle per page) to 1048576 (MiB)");
    CHECK(d.message().find("cudapool: Invalid conf pair: expandable_handle_mb:" +
                           std::string(value)) == 0);
  }
  const ParseResult r = parse_conf("expandable_handle_mb:1048577");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].message().find("1 TiB") != std::string::npos);
}

TEST_CASE("config handles: without expandable segments the key is noted as having no effect") {
  const ParseResult r = parse_conf("expandable_handle_mb:256");
  CHECK(r.diagnostics.empty());
  CHECK(r.options.expandable_handle == 256 * kMiB);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].key == "expandable_handle_mb");
  CHECK(r.notes[0].message() ==
        "cudapool: note: expandable_handle_mb:256 has no effect while expandable_segments is "
        "False");
  CHECK(parse_conf("expandable_segments:True,expandable_handle_mb:256").notes.empty());
  CHECK(parse_conf("expandable_handle_mb:0").notes.empty());
}
