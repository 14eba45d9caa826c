// SPDX-License-Identifier: Apache-2.0
// tools/analyze/page_parts.h: three members of the page's object of a log (page_json.h): the
// oom events with their explanations (pagedata.py oom_entries), the leaks with their frames named
// and grouped by stack (sites.py leak_groups), and the allocation sites (sites.py Sites.named,
// most_frequent). Not here: the figures (analysis.h, report.h).
#pragma once

#include <cstddef>

#include "tools/analyze/analysis.h"
#include "tools/analyze/frames.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/report.h"

namespace cudapool::analyze {

void write_page_ooms(JsonOut& out, const LogAnalysis& a);
void write_page_leaks(JsonOut& out, const LogAnalysis& a, const Report& r, const Frames& frames,
                      std::size_t max_listed);
void write_page_sites(JsonOut& out, const LogAnalysis& a, const Frames& frames);

}  // namespace cudapool::analyze
