// SPDX-License-Identifier: Apache-2.0
// tools/analyze/line_checks.h: the header line's and the summary line's fields checked against
// their kinds, as the Python reader does (tests/oracle/checks.py): a field of the
// wrong kind is left out of the object (a leak's field becomes null; a modules entry without a
// valid base, end and path is left out whole) and named in a problem, so that nothing read from
// the object is a wrong figure. The devices are bounded by the DeviceGate: the header keeps its
// first kMaxDevices entries (the gate learns every listed id), the summary the entries of
// devices whose events are taken. The field lists are the log's (docs/log-format.md;
// scripts/cudapool_analysis/vocabulary.py). Not here: the events (log_line.h).
#pragma once

#include <functional>
#include <string>

#include "tools/analyze/device_gate.h"
#include "tools/analyze/json_value.h"

namespace cudapool::analyze {

using ProblemFn = std::function<void(const std::string&)>;

void check_header(JsonValue& header, const ProblemFn& problem, DeviceGate& gate);
void check_summary(JsonValue& summary, const ProblemFn& problem, const DeviceGate& gate);

// The fields of a summary's leaks_omitted, in order.
inline constexpr const char* kLeaksOmittedFields[] = {"count", "size", "block_size"};

}  // namespace cudapool::analyze
