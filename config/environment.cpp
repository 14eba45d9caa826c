// SPDX-License-Identifier: Apache-2.0
// config/environment.cpp: environment-variable precedence (see environment.h).
#include "config/environment.h"

namespace cudapool::config {

ConfSource select_conf(const std::function<const char*(const char*)>& lookup) {
  if (!lookup) return {};
  for (const char* variable : kConfVariables) {
    if (const char* value = lookup(variable)) return {value, variable};
  }
  return {};
}

}  // namespace cudapool::config
