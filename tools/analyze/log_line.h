// SPDX-License-Identifier: Apache-2.0
// tools/analyze/log_line.h: one line of a cudapool.log/1 file as the engine reads it: an event
// with its decoded fields (and the raw fields the outputs read later: a backtrace, an oom
// event's figures, the fields an export shows as written), the header or the summary as parsed
// JSON, a definition line of Python stacks (tools/replay/definition_line.h: its frame or stack,
// which the analysis keeps in its table, python_stacks.h), a blank line, or a malformed line with
// the Python reader's words for why (docs/log-format.md "Valid lines"; tests/oracle/reader.py
// decode_event). The fast check is tools/replay/flat_json.h's scanner, the replay's; a line it
// refuses is judged by line_verdict.h. Not here: what the header's and the summary's fields may
// hold (line_checks.h), what an event means (accounting.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "log/read/writer_line.h"
#include "log/record.h"
#include "tools/analyze/json_value.h"
#include "tools/replay/definition_line.h"
#include "tools/replay/flat_json.h"

namespace cudapool::analyze {

using replay::JsonField;

using log::kContextLimit;  // ctx: 0 to 255 (log/read/writer_line.h)
using log::kDeviceLimit;   // dev: 0 to 65535
inline constexpr int kUnknownAction = -1;

// The figures an oom event carries besides size (vocabulary.OOM_FIGURES), block_size first.
inline constexpr const char* kOomFigureNames[] = {
    "block_size", "segment_size", "device_total", "device_free",       "cap",
    "reserved",   "allocated",    "free_blocks",  "largest_free_block"};
inline constexpr std::size_t kOomFigures = 9;

// The top-level fields of a line the engine reads (the last of a repeated key).
struct RawFields {
  std::optional<JsonField> action, schema, seq, t_ns, tid, dev, ctx, ptr, size, block_size, segment,
      stream, devices, cache_hit, backtrace, cause, entry, caller, error, python_stack;
  std::optional<JsonField> figures[kOomFigures];
  void clear();
  void take(const JsonField& f);
  // Where event field f is kept (block_size: its own, figures[0] is take()'s copy of it for an oom
  // event); null for one not kept (latency_ns).
  std::optional<JsonField>* slot(log::EventField f);
  const std::optional<JsonField>* slot(log::EventField f) const {
    return const_cast<RawFields*>(this)->slot(f);
  }
};

// An action's number as Event::action holds it (a switch's case labels).
constexpr int action_id(log::LogAction a) {
  return static_cast<int>(a);
}

struct PythonStack;  // python_stacks.h

struct Event {
  std::uint64_t seq = 0, t_ns = 0, tid = 0, ptr = 0, size = 0, block_size = 0;
  int dev = 0, ctx = 0;
  bool has_segment = false;
  std::uint64_t segment = 0;
  std::uint64_t stream = 0;     // 0: none (the default stream)
  int action = kUnknownAction;  // a log::LogAction, or kUnknownAction
  std::string_view action_name;
  bool cache_hit = false;  // "cache_hit": true
  // The fields as its line wrote them; empty for an event of a record (record).
  const RawFields* raw = nullptr;
  // An event handed over as its record, not its line (the in-process replay's: replayed.h): the
  // record, for what its line would hold as written (written_field.h). Valid during the call.
  const log::LogRecord* record = nullptr;
  // An alloc event's Python stack, when its python_stack names one defined before it (set by the
  // analysis from its table, python_stacks.h; valid during the call); null: none.
  const PythonStack* python = nullptr;
};

enum class LineKind : std::uint8_t { kEvent, kHeader, kSummary, kBlank, kMalformed, kDefinition };

struct Line {
  LineKind kind = LineKind::kBlank;
  Event event;
  std::string problem;  // kMalformed: the report's text, "malformed: ..."
  // When the line is the input's last and has no newline after it: its problem, if another (a
  // fault at the line's very end is placed one character further with a newline).
  std::string problem_if_last;
  std::optional<JsonValue> object;    // kHeader, kSummary (and a malformed schema: its value)
  replay::DefinitionLine definition;  // kDefinition: the frame or the stack it defines
};

// An unsigned integer field by the Python reader's rule (reader.check_uint): its value, or the
// reason it is not one ("size is not an integer", "size is negative (-1)", "size is
// 18446744073709551616, not below 2**64").
std::optional<std::uint64_t> uint_field(const char* name, const JsonField& f, std::string* why);

class LineDecoder {
 public:
  // Decodes one line (without its newline). The returned Line and its views are valid until
  // the next call.
  const Line& decode(std::string_view text);
  // Whether the line was one JSON object (valid or not as a line of the log), and its fields.
  bool object() const { return object_; }
  const RawFields& raw() const { return raw_; }
  // Its action, when a string (decoded; valid until the next call).
  const std::string* action() const { return action_set_ ? &action_ : nullptr; }

 private:
  bool object_ = false, action_set_ = false;
  void event_fields(const std::string& action);
  Line line_;
  RawFields raw_;
  std::string action_;
};

}  // namespace cudapool::analyze
