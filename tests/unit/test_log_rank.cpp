// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_rank.cpp: the process's rank in the log's header (issue 20): Logger::start
// writes "rank" and "rank_from" when the launcher's variable (RANK, OMPI_COMM_WORLD_RANK,
// SLURM_PROCID, as %r takes it) holds a decimal integer below 2^31, and neither otherwise. Not
// here: the %r of the file name (test_log_path.cpp), the readers of the field (tests/cli).
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "log/format.h"
#include "log/logger.h"
#include "log/path_template.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::format_header;
using cudapool::log::HeaderInfo;
using cudapool::log::Logger;
using cudapool::log::rank_variable;
using cudapool::log::Summary;
using logtest::env_of;
using logtest::read_file;
using logtest::sample_header;
using logtest::StderrCapture;
using logtest::TempDir;
using nlohmann::json;

namespace {

// The header line of a log started with these variables (a template without %r: "1.5" or " 1"
// is no rank for a file name, log/path_template.h, yet the header must still leave it out).
json header_with(const std::map<std::string, std::string>& vars) {
  TempDir dir;
  StderrCapture err;
  Logger* log = Logger::start(dir / "run.jsonl", sample_header(), env_of(vars), 256);
  REQUIRE(log != nullptr);
  const std::string path = log->path();
  log->finish(Summary{});
  delete log;
  std::istringstream lines(read_file(path));
  std::string first;
  std::getline(lines, first);
  return json::parse(first);
}

}  // namespace

TEST_CASE("log rank: the launcher's variable, in %r's order, with its name") {
  CHECK(rank_variable(env_of({})).name == nullptr);
  CHECK(rank_variable(nullptr).name == nullptr);
  const auto r = rank_variable(env_of({{"SLURM_PROCID", "5"}, {"OMPI_COMM_WORLD_RANK", "6"}}));
  REQUIRE(r.name != nullptr);
  CHECK(std::string(r.name) == "OMPI_COMM_WORLD_RANK");
  CHECK(r.value == "6");
  CHECK(std::string(rank_variable(env_of({{"RANK", ""}, {"SLURM_PROCID", "1"}})).name) ==
        "SLURM_PROCID");  // an empty value is not set, as for %r
}

TEST_CASE("log rank: the header names the rank and where it came from") {
  json h = header_with({{"RANK", "3"}});
  CHECK(h.at("rank") == 3);
  CHECK(h.at("rank_from") == "RANK");
  h = header_with({{"SLURM_PROCID", "17"}});
  CHECK(h.at("rank") == 17);
  CHECK(h.at("rank_from") == "SLURM_PROCID");
  h = header_with({{"RANK", "0"}});
  CHECK(h.at("rank") == 0);
  h = header_with({{"RANK", "2147483647"}});
  CHECK(h.at("rank") == 2147483647);
}

TEST_CASE("log rank: no rank in the header without a numeric launcher variable") {
  for (const auto& vars : std::initializer_list<std::map<std::string, std::string>>{
           {}, {{"RANK", "two"}}, {{"RANK", "-1"}}, {{"RANK", "+1"}}, {{"RANK", "1.5"}},
           {{"RANK", "2147483648"}}, {{"RANK", "99999999999"}}, {{"RANK", " 1"}}}) {
    const json h = header_with(vars);
    INFO("variables: " << (vars.empty() ? "none" : vars.begin()->second));
    CHECK(!h.contains("rank"));
    CHECK(!h.contains("rank_from"));
  }
}

TEST_CASE("log rank: format_header writes the fields only for a rank of 0 or more") {
  HeaderInfo h = sample_header();
  CHECK(!json::parse(format_header(h)).contains("rank"));
  h.rank = 4;
  h.rank_from = "RANK";
  const json j = json::parse(format_header(h));
  CHECK(j.at("rank") == 4);
  CHECK(j.at("rank_from") == "RANK");
}
