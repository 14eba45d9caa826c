// tests/unit/tune_test_util.h: shared helper of the tune tests (test_tune_*.cpp): the outcome of
// one setting's replay of a whole log, read as `cudapool replay` reads it. Not a test.
#pragma once

#include <sstream>
#include <string>

#include "tools/replay/replayer.h"
#include "tools/tune/pass.h"

namespace tunetest {

inline cudapool::tune::Outcome whole_replay(const std::string& text, const std::string& conf) {
  cudapool::replay::ReplaySettings settings;
  settings.conf = conf;
  cudapool::replay::Replayer r(settings);
  std::istringstream in(text);
  r.feed_stream(in);
  return cudapool::tune::outcome_of(r);
}

}  // namespace tunetest
