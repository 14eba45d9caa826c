// SPDX-License-Identifier: Apache-2.0
// tools/analyze/segment_map.h: the page's segment map of a layout (layout.h): every region
// (segment, or run of mapped pages) with its blocks, allocated, fenced or free, in address
// order, within a budget (kMaxRegions drawn, kMaxBlocks listed), with totals over all of them:
// the port of tests/oracle/segmap.py snapshot(), field by field. Not here: the
// layout, drawing it (page/report.js).
#pragma once

#include <cstddef>

#include "tools/analyze/json_out.h"
#include "tools/analyze/layout.h"

namespace cudapool::analyze {

inline constexpr std::size_t kMaxRegions = 300;   // regions drawn per map: the largest
inline constexpr std::size_t kMaxBlocks = 30000;  // blocks listed per map

// Writes the map's members (the caller opens and closes its object). free_on_request: the log
// has no free_completed events (fenced blocks are gone, none is drawn fenced).
void write_segment_map(JsonOut& out, const Layout& layout, bool free_on_request);

}  // namespace cudapool::analyze
