// SPDX-License-Identifier: Apache-2.0
// tools/replay/report.h: what cudapool-replay prints: the memory_summary table per device and a
// replay account (text), or one JSON object with the statistics under torch.cuda.memory_stats()
// names (--json). Formatting only.
#pragma once

#include <string>

#include "tools/replay/replayer.h"

namespace cudapool::replay {

std::string text_report(const Replayer& replayer, double seconds);
std::string json_report(const Replayer& replayer, double seconds);

}  // namespace cudapool::replay
