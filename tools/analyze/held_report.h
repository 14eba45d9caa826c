// SPDX-License-Identifier: Apache-2.0
// tools/analyze/held_report.h: what the report says of the bytes held over time (issue 31;
// docs/report.md, "Held over time"): per device and for all devices together, the time-weighted
// mean of allocated and of reserved bytes over the log's span (its first event to its last), and
// how long reserved bytes stayed above a level (--level: a fraction of the peak, by default half,
// or a size), as figures made at the log's end from held.h's series, and as the report's JSON
// ("held": docs/analysis-format.md). Its test oracle: tests/oracle/held_pass.py. Not here:
// following the figures during the pass (held.h), their words (scripts/cudapool_analysis/held.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tools/analyze/figure.h"
#include "tools/analyze/held.h"
#include "tools/analyze/json_out.h"

namespace cudapool::analyze {

// What --level takes, said where a level is refused and in --help.
extern const char* const kLevelForms;

// A fraction of the peak, written with a decimal point, from 0 to 1 (0.5, 0.25, 1.0; at most 9
// decimals), or a size as the tools take sizes (tools/replay/bytes_arg.h: 10G, 512MiB, plain
// bytes). false for anything else.
bool parse_level(const std::string& text, HeldLevel* out);

// The level in bytes: of_peak, floor(peak * num / den); else its bytes.
Figure level_bytes(const HeldLevel& level, Figure peak);

struct HeldAllocated {
  std::optional<Figure> mean;  // none: no time span, or overflowed
  bool overflowed = false;
};

struct HeldReserved {
  Figure level = 0;
  std::optional<Figure> mean;
  bool overflowed = false;
  // The time above the level and its share of the span (none: no time span), and the time the
  // bounded table could not place on either side of it (held.h: 0 but for a log of more than
  // kHeldBins distinct figures).
  std::optional<std::uint64_t> above_ns;
  std::uint64_t unsure_ns = 0;
  std::optional<double> share;
};

// One device's figures, or all devices' together.
struct HeldPart {
  std::optional<HeldAllocated> allocated;  // none: the program held no bytes (no alloc events)
  std::optional<HeldReserved> reserved;    // none: no segment events
};

struct HeldPeak {
  Figure bytes = 0;
  std::uint64_t seq = 0, t_ns = 0;
};

struct HeldLog {
  std::optional<std::uint64_t> from_t_ns, to_t_ns;  // none: no events
  HeldLevel level;
  std::optional<HeldPeak> peak_reserved;  // of all devices together
  HeldPart all;
};

// A device's (or the sum's) figures over span ns (none: no events). peak_reserved: the peak the
// level is a fraction of, none when the device had no segment events; allocated: whether it
// ever held allocated bytes.
HeldPart held_part(const HeldDevice& d, const HeldLevel& level,
                   const std::optional<Figure>& peak_reserved, bool allocated,
                   const std::optional<std::uint64_t>& span);

// The JSON of a device's figures ({"allocated", "reserved"}) and of the log's ({"from_t_ns",
// "to_t_ns", "span_s", "level", "peak_reserved", "allocated", "reserved"}: the peak's time_s
// counts from from_t_ns, the log's first event).
void write_held_part(JsonOut& out, const HeldPart& p);
void write_held_log(JsonOut& out, const HeldLog& h);

}  // namespace cudapool::analyze
