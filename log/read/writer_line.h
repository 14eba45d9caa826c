// SPDX-License-Identifier: Apache-2.0
// log/read/writer_line.h: the one-pass scanner of an event line in the form the log's writers
// write it (log/format_event.cpp, bench/make_training_log), the readers' fast path: one compact
// JSON object, no white space, each key once (in the writer's order or any other), every key an
// event field of log/fields.def the caller accepts, each value in the writer's form of its field's
// kind (an unsigned integer: 1 to 19 digits without a leading zero; an integer: the same, a minus
// before it; a hex string: "0x" and 1 to 16 hex digits; a string: 1 or more printable ASCII
// characters, no quote or backslash, the action's of [a-z_] only; a bool: true or false; a list of
// hex strings: such hex strings, a comma between two), the fields
// every action carries there, dev and ctx in range, the action not the summary's. Such a line is a
// valid event line of the format (docs/log-format.md, "Valid lines"): the scanner gives each
// field's text and value. Any other line, valid or not, is not the scanner's (false): the caller's
// general path judges it (tools/replay/log_event.cpp, tools/analyze/log_line.cpp), and only it says
// what is wrong with a line. Not here: what a field means, the header and the summary.
#pragma once

#include <cstdint>
#include <string_view>

#include "log/fields.h"

namespace cudapool::log {

// The ranges of dev, a device ordinal (0 to 65535), and ctx, a context number (0 to 255, as the
// shim numbers them). A line with one outside is malformed.
inline constexpr std::uint64_t kDeviceLimit = 1 << 16;
inline constexpr std::uint64_t kContextLimit = 1 << 8;

static_assert(kEventFieldCount <= 32);
constexpr std::uint32_t field_bit(EventField f) {
  return 1u << static_cast<unsigned>(f);
}
inline constexpr std::uint32_t kEveryEventField =
    static_cast<std::uint32_t>((std::uint64_t{1} << kEventFieldCount) - 1);

// What every event carries, whatever its action (log/fields.def: always, every action).
inline constexpr std::uint32_t kRequiredEventFields = [] {
  std::uint32_t mask = 0;
  for (std::size_t i = 0; i < kEventFieldCount; ++i) {
    const EventFieldInfo& f = kEventFields[i];
    if (f.presence == FieldPresence::kAlways && f.actions.empty()) {
      mask |= field_bit(static_cast<EventField>(i));
    }
  }
  return mask;
}();

struct WriterField {
  // The value as written, a string's (a hex string's) without its quotes, a list with its brackets.
  std::string_view text;
  std::uint64_t value;  // an integer's magnitude, a hex string's value, a bool's 1 or 0
  bool negative;        // an integer written with a minus
};

struct WriterLine {
  std::uint32_t present = 0;             // field_bit(f) for each field the line has
  WriterField fields[kEventFieldCount];  // those of present only

  bool has(EventField f) const { return (present & field_bit(f)) != 0; }
  // f must be present.
  const WriterField& operator[](EventField f) const { return fields[static_cast<std::size_t>(f)]; }
};

// text: the line without its newline; accepted: the field_bit()s of the fields the caller reads (a
// line with another is not the scanner's). On true, *out holds the line's fields; on false, *out
// holds anything.
bool scan_writer_line(std::string_view text, std::uint32_t accepted, WriterLine* out);

}  // namespace cudapool::log
