// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_diagnostic.cpp: the one-line renderings of Diagnostic and Note.
#include <string>

#include "config/diagnostic.h"
#include "config/parse.h"
#include "tests/unit/catch.h"

using cudapool::config::Diagnostic;
using cudapool::config::Note;

TEST_CASE("config: diagnostic message has the documented one-line form") {
  const Diagnostic d{"max_split_size_mb", "10", "an integer >= 20 (MiB)", "unlimited", ""};
  CHECK(d.message() ==
        "cudapool: Invalid conf pair: max_split_size_mb:10 (accepted: an integer >= 20 (MiB); "
        "keeping: unlimited)");
}

TEST_CASE("config: parse_conf produces the documented message for max_split_size_mb:10") {
  const auto r = cudapool::config::parse_conf("max_split_size_mb:10");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].message() ==
        "cudapool: Invalid conf pair: max_split_size_mb:10 (accepted: an integer >= 20 (MiB); "
        "keeping: unlimited)");
}

TEST_CASE("config: diagnostic message puts the detail first and leaves out empty parts") {
  CHECK(Diagnostic{"k", "v", "", "", "why"}.message() == "cudapool: Invalid conf pair: k:v (why)");
  CHECK(Diagnostic{"k", "v", "", "", ""}.message() == "cudapool: Invalid conf pair: k:v");
  CHECK(Diagnostic{"k", "", "acc", "kept", "why"}.message() ==
        "cudapool: Invalid conf pair: k (why; accepted: acc; keeping: kept)");
  CHECK(Diagnostic{"", ",", "", "", "stray"}.message() == "cudapool: Invalid conf pair: , (stray)");
}

TEST_CASE("config: a diagnostic with neither key nor value renders as a plain line") {
  CHECK(Diagnostic{"", "", "", "", "further 3 diagnostics suppressed"}.message() ==
        "cudapool: further 3 diagnostics suppressed");
}

TEST_CASE("config: note message has the documented form") {
  CHECK(Note{"backend", "backend:native is a PyTorch-only setting and is ignored"}.message() ==
        "cudapool: note: backend:native is a PyTorch-only setting and is ignored");
}

TEST_CASE("config: messages are one line") {
  const auto r = cudapool::config::parse_conf("a:b,\n,max_split_size_mb:1");
  REQUIRE_FALSE(r.diagnostics.empty());
  for (const auto& d : r.diagnostics) CHECK(d.message().find('\n') == std::string::npos);
}

TEST_CASE("config: shorten keeps text up to 80 characters and cuts longer text to 80") {
  using cudapool::config::shorten;
  CHECK(shorten(std::string(80, 'a')) == std::string(80, 'a'));
  CHECK(shorten(std::string(81, 'a')) == std::string(77, 'a') + "...");
  CHECK(shorten("") == "");
}

TEST_CASE("config: unknown keys longer than 80 characters are shortened") {
  const auto r = cudapool::config::parse_conf(std::string(500, 'q') + ":1");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].key == std::string(77, 'q') + "...");
}
