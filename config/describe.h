// config/describe.h: the settings a ParseResult puts in force, one line per key of the table, in
// user units, with where each came from. Formatting them for a terminal is the tool's job.
#pragma once

#include <string>
#include <vector>

#include "config/parse.h"

namespace cudapool::config {

struct EffectiveSetting {
  std::string name;    // table name of the key
  std::string value;   // in user units: "unlimited", "128", "True", "off", "[256:1,>:4]", ...
  std::string origin;  // "default" or "conf"
};

// One entry per key in table order; PyTorch-only keys appear only when the string gave them a
// valid value (their value is then "ignored").
std::vector<EffectiveSetting> describe(const ParseResult& result);

}  // namespace cudapool::config
