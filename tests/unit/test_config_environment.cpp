// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_environment.cpp: which environment variable select_conf picks.
#include <map>
#include <string>

#include "config/environment.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::ConfSource;
using cudapool::config::select_conf;

// A fake environment: only the names in `vars` are set.
ConfSource select_from(const std::map<std::string, std::string>& vars) {
  return select_conf([&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("config: select_conf with nothing set gives an empty conf and no variable") {
  const ConfSource s = select_from({});
  CHECK(s.conf.empty());
  CHECK(s.variable.empty());
}

TEST_CASE("config: select_conf reads PYTORCH_CUDA_ALLOC_CONF when it is the only one set") {
  const ConfSource s = select_from({{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128"}});
  CHECK(s.conf == "max_split_size_mb:128");
  CHECK(s.variable == "PYTORCH_CUDA_ALLOC_CONF");
}

TEST_CASE("config: select_conf prefers PYTORCH_ALLOC_CONF over PYTORCH_CUDA_ALLOC_CONF") {
  const ConfSource s =
      select_from({{"PYTORCH_CUDA_ALLOC_CONF", "a:1"}, {"PYTORCH_ALLOC_CONF", "b:2"}});
  CHECK(s.conf == "b:2");
  CHECK(s.variable == "PYTORCH_ALLOC_CONF");
}

TEST_CASE("config: select_conf prefers CUDAPOOL_CONF over both PyTorch variables") {
  const ConfSource s = select_from({{"PYTORCH_CUDA_ALLOC_CONF", "a:1"},
                                    {"PYTORCH_ALLOC_CONF", "b:2"},
                                    {"CUDAPOOL_CONF", "c:3"}});
  CHECK(s.conf == "c:3");
  CHECK(s.variable == "CUDAPOOL_CONF");
}

TEST_CASE("config: select_conf counts a variable set to the empty string") {
  const ConfSource s = select_from({{"PYTORCH_CUDA_ALLOC_CONF", "a:1"}, {"CUDAPOOL_CONF", ""}});
  CHECK(s.conf.empty());
  CHECK(s.variable == "CUDAPOOL_CONF");
}

TEST_CASE("config: select_conf asks for the variables in precedence order and stops at the first") {
  std::vector<std::string> asked;
  const ConfSource s = select_conf([&asked](const char* name) -> const char* {
    asked.emplace_back(name);
    return std::string(name) == "PYTORCH_ALLOC_CONF" ? "x:1" : nullptr;
  });
  CHECK(s.variable == "PYTORCH_ALLOC_CONF");
  CHECK(asked == std::vector<std::string>{"CUDAPOOL_CONF", "PYTORCH_ALLOC_CONF"});
}

TEST_CASE("config: select_conf with an empty lookup function counts as nothing set") {
  const ConfSource s = select_conf(nullptr);
  CHECK(s.variable.empty());
  CHECK(s.conf.empty());
}
