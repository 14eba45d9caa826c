// SPDX-License-Identifier: Apache-2.0
// config/parse.h: turns a PYTORCH_CUDA_ALLOC_CONF-style string into Options plus what was wrong
// with it. Bad pairs are reported and skipped (the default or earlier value stays) and parsing
// goes on; nothing here prints, throws, aborts or reads the environment (environment.h does).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/diagnostic.h"
#include "config/options.h"

namespace cudapool::config {

// At most this many diagnostics (and, separately, notes) are kept; one more entry then says how
// many further ones were suppressed.
inline constexpr std::size_t kMaxDiagnostics = 64;

struct ParseResult {
  Options options;                      // defaults, overridden by every accepted pair
  std::vector<Diagnostic> diagnostics;  // problems, in string order (capped, see above)
  std::vector<Note> notes;              // accepted-but-worth-saying (PyTorch-only keys, ...)
  std::vector<std::string> set_keys;    // table names of keys that took a value, first-set order
};

// Linear in conf.size(). An empty string gives defaults and no diagnostics.
ParseResult parse_conf(std::string_view conf);

}  // namespace cudapool::config
