// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_pytorch_only.cpp: keys PyTorch knows and cudapool ignores: validated
// as PyTorch does, then reported as a Note (not a Diagnostic).
#include <string>

#include "config/parse.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::parse_conf;
using cudapool::config::ParseResult;

void check_ignored(const std::string& pair, const std::string& table_name) {
  INFO(pair);
  const ParseResult r = parse_conf(pair);
  CHECK(r.diagnostics.empty());
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].key == table_name);
  CHECK(r.notes[0].message() ==
        "cudapool: note: " + pair + " is a PyTorch-only setting and is ignored");
  CHECK(r.set_keys == std::vector<std::string>{table_name});
}

void check_rejected(const std::string& pair) {
  INFO(pair);
  const ParseResult r = parse_conf(pair);
  CHECK(r.diagnostics.size() == 1);
  CHECK(r.notes.empty());
  CHECK(r.set_keys.empty());
}

}  // namespace

TEST_CASE("config: backend native and cudaMallocAsync are noted as ignored") {
  CHECK(parse_conf("backend:native").notes[0].message() ==
        "cudapool: note: backend:native is a PyTorch-only setting and is ignored");
  check_ignored("backend:native", "backend");
  check_ignored("backend:cudaMallocAsync", "backend");
}

TEST_CASE("config: backend with another value is a diagnostic") {
  check_rejected("backend:Native");
  check_rejected("backend:hipMallocAsync");
  check_rejected("backend:");
}

TEST_CASE("config: pinned host-register keys take booleans, HIP alias included") {
  check_ignored("pinned_use_cuda_host_register:True", "pinned_use_cuda_host_register");
  check_ignored("pinned_use_hip_host_register:False", "pinned_use_cuda_host_register");
  check_rejected("pinned_use_cuda_host_register:true");
}

TEST_CASE("config: pinned_num_register_threads must be a power of two up to 128") {
  check_ignored("pinned_num_register_threads:1", "pinned_num_register_threads");
  check_ignored("pinned_num_register_threads:128", "pinned_num_register_threads");
  check_rejected("pinned_num_register_threads:0");
  check_rejected("pinned_num_register_threads:3");
  check_rejected("pinned_num_register_threads:256");
}

TEST_CASE("config: pinned_use_background_threads takes a boolean") {
  check_ignored("pinned_use_background_threads:True", "pinned_use_background_threads");
  check_rejected("pinned_use_background_threads:1");
}

TEST_CASE("config: pinned_reserve_segment_size_mb must be an integer above 0") {
  check_ignored("pinned_reserve_segment_size_mb:64", "pinned_reserve_segment_size_mb");
  check_rejected("pinned_reserve_segment_size_mb:0");
  check_rejected("pinned_reserve_segment_size_mb:1.5");
}

TEST_CASE("config: graph_capture_record_stream_reuse takes a boolean") {
  check_ignored("graph_capture_record_stream_reuse:False", "graph_capture_record_stream_reuse");
  check_rejected("graph_capture_record_stream_reuse:no");
}

TEST_CASE("config: PyTorch-only keys do not change any cudapool option") {
  const ParseResult r = parse_conf(
      "backend:cudaMallocAsync,pinned_use_cuda_host_register:True,pinned_num_register_threads:8,"
      "pinned_use_background_threads:True,pinned_reserve_segment_size_mb:64,"
      "graph_capture_record_stream_reuse:True");
  CHECK(r.diagnostics.empty());
  CHECK(r.notes.size() == 6);
  const cudapool::config::Options defaults;
  CHECK(r.options.max_split_size == defaults.max_split_size);
  CHECK_FALSE(r.options.expandable_segments);
  CHECK_FALSE(r.options.strict);
  CHECK(r.options.roundup_power2_divisions == defaults.roundup_power2_divisions);
}
