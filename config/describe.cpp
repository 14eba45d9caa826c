// config/describe.cpp: lists the effective settings by walking the key table (see describe.h).
#include "config/describe.h"

#include <algorithm>

#include "config/keys.h"

namespace cudapool::config {

std::vector<EffectiveSetting> describe(const ParseResult& result) {
  std::vector<EffectiveSetting> settings;
  for (const KeyInfo& key : key_table()) {
    const bool given = std::find(result.set_keys.begin(), result.set_keys.end(), key.name) !=
                       result.set_keys.end();
    if (key.pytorch_only && !given) continue;
    settings.push_back(
        {std::string(key.name), key.render(result.options), given ? "conf" : "default"});
  }
  return settings;
}

}  // namespace cudapool::config
