// SPDX-License-Identifier: Apache-2.0
// tools/analyze/oom_figures.h: an oom event's figures (docs/log-format.md, the oom action) as the
// shim wrote them, and their explanation: pool/oom.cpp's explain_oom, the very text the shim
// printed on stderr (one function for both, so they cannot drift), without its "cudapool: "
// prefixes. The figures follow tests/oracle/oom.py oom_figures(): none when the
// event has no cause of the shim's (another writer's), and a reason when a figure is of the wrong
// kind. Not here: counting oom events (accounting.h), writing them (report_json.h, page_json.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/analyze/json_out.h"
#include "tools/analyze/log_line.h"

namespace cudapool::analyze {

struct OomFigures {
  std::string cause;
  std::uint64_t requested = 0;
  std::uint64_t values[kOomFigures] = {};  // kOomFigureNames' order: block_size first
  bool device_free_known = false;
};

struct OomRecord {
  int dev = 0;
  std::uint64_t size = 0, seq = 0, t_ns = 0;
  std::optional<OomFigures> figures;
  std::string malformed;  // why the figures were left out (a figure of the wrong kind)
};

// The record of an oom event.
OomRecord read_oom(const Event& e);

// The explanation's lines (pool/oom.cpp explain_oom's, the shim's text, without its prefixes).
std::vector<std::string> explain(const OomFigures& f, int dev);

// {"cause", "requested", "block_size", ..., "device_free_known"}: oom.py's dict, in its order.
void write_figures(JsonOut& out, const OomFigures& f);

}  // namespace cudapool::analyze
