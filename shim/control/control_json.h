// SPDX-License-Identifier: Apache-2.0
// shim/control/control_json.h: the JSON answers of the control endpoint: `stats json` (schema
// cudapool.control/1: the process, its settings, the endpoint, and per device the
// torch.cuda.memory_stats() names with what is fenced, idle and in threads' caches right now) and
// `snapshot` (schema cudapool.control.snapshot/1: every block of every pool, which
// scripts/cudapool_analysis/control.py turns into a memory_viz snapshot). docs/control.md
// describes both. Formatting only, from copies made under the pools' locks
// (reports/pool_readings.h). Not here: the text answers (control_commands.cpp), Prometheus
// (prometheus_text.h).
#pragma once

#include <string>
#include <vector>

#include "shim/control/request_context.h"
#include "shim/reports/pool_readings.h"

namespace cudapool::shim {

std::string stats_json(const std::vector<DeviceReading>& devices, const RequestContext& context);
std::string snapshot_json(const std::vector<PoolBlocks>& pools);

// The process and its settings as JSON members, without braces: "pid":...,"options":{...}.
std::string process_json_members();

}  // namespace cudapool::shim
