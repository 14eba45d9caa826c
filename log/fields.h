// SPDX-License-Identifier: Apache-2.0
// log/fields.h: the log's fields (log/fields.def) as C++: an enumerator per field, a constexpr
// table of their names, kinds, presence, actions and meanings, the JSON keys the event formatter
// writes
// (`,"name":`, format_event.cpp) and the lookup of a key the readers meet
// (tools/replay/log_event.cpp). Header-only and constexpr, so that cudapool-vocabulary uses it
// without linking the log library. Not here: formatting values (format.h), parsing values
// (tools/replay/flat_json.h), the actions (record.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cudapool::log {

// The summary line's action (an event has another).
inline constexpr std::string_view kSummaryAction = "summary";

enum class FieldKind : std::uint8_t {
  kUint,
  kInt,
  kHex,
  kString,
  kBool,
  kObject,
  kList,
  kHexList,
  kStringList
};
enum class FieldPresence : std::uint8_t { kAlways, kWhenSet, kWithFigures };
enum class LinePart : std::uint8_t {
  kHeader,
  kHeaderDevice,
  kSummary,
  kSummaryDevice,
  kLeak,
  kLeaksOmitted,
  kModule,
  kLogErrors,
  kPythonFrame,  // a line of its own (CUDAPOOL_BACKTRACE=python): a frame of a Python stack
  kPythonStack   // a line of its own: a Python stack, its frames by id
};

// The words log_schema.json and docs/log-format.md use (scripts/cudapool_analysis/vocabulary.py
// has the same kinds).
constexpr std::string_view field_kind_text(FieldKind kind) {
  switch (kind) {
    case FieldKind::kUint:
      return "unsigned integer";
    case FieldKind::kInt:
      return "integer";
    case FieldKind::kHex:
      return "hex string";
    case FieldKind::kString:
      return "string";
    case FieldKind::kBool:
      return "bool";
    case FieldKind::kObject:
      return "object";
    case FieldKind::kList:
      return "list";
    case FieldKind::kHexList:
      return "list of hex strings";
    case FieldKind::kStringList:
      return "list of strings";
  }
  return "";
}
constexpr std::string_view field_presence_text(FieldPresence presence) {
  switch (presence) {
    case FieldPresence::kAlways:
      return "always";
    case FieldPresence::kWhenSet:
      return "when set";
    case FieldPresence::kWithFigures:
      return "with figures";
  }
  return "";
}
constexpr std::string_view line_part_text(LinePart part) {
  switch (part) {
    case LinePart::kHeader:
      return "header";
    case LinePart::kHeaderDevice:
      return "header_device";
    case LinePart::kSummary:
      return "summary";
    case LinePart::kSummaryDevice:
      return "summary_device";
    case LinePart::kLeak:
      return "leak";
    case LinePart::kLeaksOmitted:
      return "leaks_omitted";
    case LinePart::kModule:
      return "module";
    case LinePart::kLogErrors:
      return "log_errors";
    case LinePart::kPythonFrame:
      return "python_frame";
    case LinePart::kPythonStack:
      return "python_stack";
  }
  return "";
}

enum class EventField : std::uint8_t {
#define CUDAPOOL_EVENT_FIELD(id, name, kind, presence, actions, meaning) id,
#include "log/fields.def"
  kCount
};
inline constexpr std::size_t kEventFieldCount = static_cast<std::size_t>(EventField::kCount);

enum class LineField : std::uint8_t {
#define CUDAPOOL_LINE_FIELD(part, id, name, kind, presence, meaning) id,
#include "log/fields.def"
  kCount
};

struct EventFieldInfo {
  std::string_view name;
  FieldKind kind;
  FieldPresence presence;
  std::string_view actions;  // separated by spaces; empty: every action
  std::string_view meaning;
};
struct LineFieldInfo {
  LinePart part;
  std::string_view name;
  FieldKind kind;
  FieldPresence presence;
  std::string_view meaning;
};

inline constexpr EventFieldInfo kEventFields[] = {
#define CUDAPOOL_EVENT_FIELD(id, name, kind, presence, actions, meaning) \
  {name, FieldKind::kind, FieldPresence::presence, actions, meaning},
#include "log/fields.def"
};
inline constexpr LineFieldInfo kLineFields[] = {
#define CUDAPOOL_LINE_FIELD(part, id, name, kind, presence, meaning) \
  {LinePart::part, name, FieldKind::kind, FieldPresence::presence, meaning},
#include "log/fields.def"
};

constexpr const EventFieldInfo& event_field(EventField f) {
  return kEventFields[static_cast<std::size_t>(f)];
}
constexpr std::string_view event_field_name(EventField f) {
  return event_field(f).name;
}
constexpr const LineFieldInfo& line_field(LineField f) {
  return kLineFields[static_cast<std::size_t>(f)];
}
constexpr std::string_view line_field_name(LineField f) {
  return line_field(f).name;
}

// Whether an event of the action (its log name) carries the field.
constexpr bool event_field_carried_by(EventField f, std::string_view action) {
  std::string_view list = event_field(f).actions;
  if (list.empty()) return true;
  while (!list.empty()) {
    const std::size_t space = list.find(' ');
    if (list.substr(0, space) == action) return true;
    list = space == std::string_view::npos ? std::string_view() : list.substr(space + 1);
  }
  return false;
}

// `,"name":` of an event field, as the formatter writes it after the previous value.
struct JsonKey {
  char text[32] = {};
  std::size_t size = 0;
};
constexpr JsonKey json_key(std::string_view name) {
  JsonKey key;
  key.text[key.size++] = ',';
  key.text[key.size++] = '"';
  for (const char c : name) key.text[key.size++] = c;
  key.text[key.size++] = '"';
  key.text[key.size++] = ':';
  return key;
}
inline constexpr JsonKey kEventKeys[] = {
#define CUDAPOOL_EVENT_FIELD(id, name, kind, presence, actions, meaning) json_key(name),
#include "log/fields.def"
};
constexpr const JsonKey& event_key(EventField f) {
  return kEventKeys[static_cast<std::size_t>(f)];
}

// The event field named key (escapes decoded), or EventField::kCount: an open-addressed hash of
// the names, built at compile time, so that a reader takes a line's keys at millions a second.
namespace fields_detail {
inline constexpr std::size_t kSlots = 128;
// No two names of the table share a slot (multipliers chosen for that; a new name that does only
// costs a second probe).
constexpr std::size_t hash(std::string_view key) {
  return (static_cast<unsigned char>(key.front()) + static_cast<unsigned char>(key.back()) * 4u +
          key.size()) %
         kSlots;
}
// key == f's name, compared with the name as a constant (an inlined compare of its length).
constexpr bool is_named(EventField f, std::string_view key) {
  switch (f) {
#define CUDAPOOL_EVENT_FIELD(id, name, kind, presence, actions, meaning) \
  case EventField::id:                                                   \
    return key == std::string_view(name);
#include "log/fields.def"
    case EventField::kCount:
      break;
  }
  return false;
}
struct Index {
  std::uint8_t slot[kSlots] = {};  // the field's index + 1; 0: empty
};
constexpr Index make_index() {
  Index index;
  for (std::size_t i = 0; i < kEventFieldCount; ++i) {
    std::size_t h = hash(kEventFields[i].name);
    while (index.slot[h] != 0) h = (h + 1) % kSlots;
    index.slot[h] = static_cast<std::uint8_t>(i + 1);
  }
  return index;
}
inline constexpr Index kIndex = make_index();
static_assert(kEventFieldCount < kSlots / 2);
}  // namespace fields_detail

inline EventField event_field_of(std::string_view key) {
  if (key.empty()) return EventField::kCount;
  for (std::size_t h = fields_detail::hash(key);; h = (h + 1) % fields_detail::kSlots) {
    const std::uint8_t s = fields_detail::kIndex.slot[h];
    if (s == 0) return EventField::kCount;
    const auto f = static_cast<EventField>(s - 1);
    if (fields_detail::is_named(f, key)) return f;
  }
}

}  // namespace cudapool::log
