// SPDX-License-Identifier: Apache-2.0
// config/environment.h: picks the conf string from the environment variables cudapool honours.
// It never calls getenv itself: the caller passes a getenv-like lookup, so that tests and the
// shim (which may not call getenv at every point) decide how variables are read.
#pragma once

#include <array>
#include <functional>
#include <string>

namespace cudapool::config {

// In order of precedence: the first one that is set wins, even when set to "".
inline constexpr std::array<const char*, 3> kConfVariables = {"CUDAPOOL_CONF", "PYTORCH_ALLOC_CONF",
                                                              "PYTORCH_CUDA_ALLOC_CONF"};

struct ConfSource {
  std::string conf;      // the variable's value; "" when none is set
  std::string variable;  // the variable it came from; "" when none is set
};

// `lookup` returns the variable's value, or nullptr when unset (like getenv). An empty lookup
// counts as no variable set.
ConfSource select_conf(const std::function<const char*(const char*)>& lookup);

}  // namespace cudapool::config
