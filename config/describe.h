// SPDX-License-Identifier: Apache-2.0
// config/describe.h: the settings a ParseResult puts in force, one line per key of the table, in
// user units, with where each came from. Formatting them for a terminal is the tool's job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/parse.h"

namespace cudapool::config {

// What kind of value a setting holds, decided by its key's kind (keys.h ValueKind), for writers
// of typed formats (the log header's options): a bool (True/False), a number (a count, MiB, a
// fraction, or one power of two of roundup_power2_divisions), or text (a choice, a list, a word
// such as "unlimited" or "off" in place of a number, "ignored").
enum class SettingType : std::uint8_t { kBool, kNumber, kText };

struct EffectiveSetting {
  std::string name;    // table name of the key
  std::string value;   // in user units: "unlimited", "128", "True", "off", "[256:1,>:4]", ...
  std::string origin;  // "default" or "conf"
  SettingType type = SettingType::kText;
};

// One entry per key in table order; PyTorch-only keys appear only when the string gave them a
// valid value (their value is then "ignored").
std::vector<EffectiveSetting> describe(const ParseResult& result);

}  // namespace cudapool::config
