// SPDX-License-Identifier: Apache-2.0
// config/describe.cpp: lists the effective settings by walking the key table (see describe.h).
#include "config/describe.h"

#include <algorithm>
#include <utility>

#include "config/keys.h"

namespace cudapool::config {

namespace {

// A number as the numeric kinds' renderers write one (digits, at most one inner '.'); they write
// a word instead for no value ("unlimited", "off").
bool rendered_number(const std::string& text) {
  if (text.empty() || text.front() == '.' || text.back() == '.') return false;
  bool dot = false;
  for (const char c : text) {
    if (c == '.' && !dot) {
      dot = true;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return true;
}

SettingType type_of(const KeyInfo& key, const std::string& text) {
  if (key.pytorch_only) return SettingType::kText;  // "ignored"
  switch (key.kind) {
    case ValueKind::kBool:
      return SettingType::kBool;
    case ValueKind::kMebibytes:
    case ValueKind::kCount:
    case ValueKind::kFraction:
    case ValueKind::kRoundupDivisions:  // a list renders as "[...]"
      return rendered_number(text) ? SettingType::kNumber : SettingType::kText;
    case ValueKind::kChoice:
      return SettingType::kText;
  }
  return SettingType::kText;
}

}  // namespace

std::vector<EffectiveSetting> describe(const ParseResult& result) {
  std::vector<EffectiveSetting> settings;
  for (const KeyInfo& key : key_table()) {
    const bool given = std::find(result.set_keys.begin(), result.set_keys.end(), key.name) !=
                       result.set_keys.end();
    if (key.pytorch_only && !given) continue;
    std::string value = key.render(result.options);
    const SettingType type = type_of(key, value);
    settings.push_back({std::string(key.name), std::move(value), given ? "conf" : "default", type});
  }
  return settings;
}

}  // namespace cudapool::config
