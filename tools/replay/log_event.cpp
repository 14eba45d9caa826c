// SPDX-License-Identifier: Apache-2.0
// tools/replay/log_event.cpp: see log_event.h.
#include "tools/replay/log_event.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "log/fields.h"
#include "log/read/line_reader.h"
#include "log/read/writer_line.h"
#include "log/record.h"
#include "tools/replay/definition_line.h"
#include "tools/replay/flat_json.h"

namespace cudapool::replay {

namespace {

// The line with each number that a double cannot hold (1e999, a 400-digit integer) written as
// null: valid JSON that nlohmann::json refuses. Such a figure is of no kind the header has.
std::string without_overflowing_numbers(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  bool in_string = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) {
        out += line[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c != '-' && (c < '0' || c > '9')) {
      out += c;
      continue;
    }
    std::size_t end = i;
    while (end < line.size() && std::strchr("0123456789+-.eE", line[end]) != nullptr &&
           line[end] != '\0') {
      ++end;
    }
    const std::string number(line.substr(i, end - i));
    const double value = std::strtod(number.c_str(), nullptr);
    out += std::isinf(value) ? "null" : number;
    i = end - 1;
  }
  return out;
}

bool parse_header(std::string_view line, LogHeader& header, std::string& problem) {
  using L = log::LineField;
  const auto key = [](L field) { return std::string(log::line_field_name(field)); };
  auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    json = nlohmann::json::parse(without_overflowing_numbers(line), nullptr, false);
  }
  if (json.is_discarded() || !json.is_object()) {
    problem = "header is not valid JSON";
    return false;
  }
  header.schema = json.value(key(L::kHeaderSchema), "");
  if (auto it = json.find(key(L::kHeaderOptions)); it != json.end() && it->is_object()) {
    header.fences_logged = it->contains("reuse_fence");
  }
  if (auto it = json.find(key(L::kHeaderHost)); it != json.end() && it->is_string()) {
    header.host = it->get<std::string>();
  }
  const auto number = [&](const std::string& name, std::uint64_t& out) {
    if (auto it = json.find(name); it != json.end() && it->is_number_unsigned()) {
      out = it->get<std::uint64_t>();
    }
  };
  number(key(L::kHeaderPid), header.pid);
  number(key(L::kHeaderStartUnixNs), header.start_unix_ns);
  number(key(L::kHeaderStartTNs), header.start_t_ns);
  if (auto it = json.find(key(L::kHeaderConf)); it != json.end() && it->is_string()) {
    header.conf = it->get<std::string>();
  }
  if (auto it = json.find(key(L::kHeaderDevices)); it != json.end() && it->is_array()) {
    for (const auto& dev : *it) {
      if (!dev.is_object()) continue;
      const auto id = dev.find(key(L::kHeaderDeviceId));
      if (id == dev.end() || !id->is_number_integer()) continue;
      // A device ordinal (0 to 65535), as an event's dev; an entry with another is left out.
      const bool in_range = id->is_number_unsigned() && id->get<std::uint64_t>() < kDeviceLimit;
      if (!in_range) continue;
      const int n = static_cast<int>(id->get<std::uint64_t>());
      header.listed_devices.insert(n);
      const auto total = dev.find(key(L::kHeaderDeviceTotalMemory));
      if (total != dev.end() && total->is_number_unsigned()) {
        header.device_memory[n] = total->get<std::uint64_t>();
      }
    }
  }
  return true;
}

// The event fields the replay reads, each kept in a slot of Fields; the others are only noted as
// present.
constexpr log::EventField kRead[] = {
    log::EventField::kAction,  log::EventField::kSeq,    log::EventField::kTNs,
    log::EventField::kTid,     log::EventField::kDev,    log::EventField::kCtx,
    log::EventField::kPtr,     log::EventField::kSize,   log::EventField::kBlockSize,
    log::EventField::kSegment, log::EventField::kStream, log::EventField::kRequestedBy};
constexpr std::array<std::int8_t, log::kEventFieldCount> kSlotOf = [] {
  std::array<std::int8_t, log::kEventFieldCount> slot{};
  slot.fill(-1);
  for (std::size_t i = 0; i < std::size(kRead); ++i) {
    slot[static_cast<std::size_t>(kRead[i])] = static_cast<std::int8_t>(i);
  }
  return slot;
}();
using log::field_bit;
constexpr std::uint32_t kRequired = log::kRequiredEventFields;

// The last occurrence of each field (a repeated key: the last one counts, as in any JSON reader):
// the event fields by log/fields.def's lookup, and the header's and summary's schema and devices.
struct Fields {
  std::optional<JsonField> read[std::size(kRead)];
  std::optional<JsonField> schema, devices;
  std::uint32_t present = 0;  // field_bit(f) for each event field the line has

  // f must be one of kRead.
  const std::optional<JsonField>& operator[](log::EventField f) const {
    return read[static_cast<std::size_t>(kSlotOf[static_cast<std::size_t>(f)])];
  }

  void take(const JsonField& f) {
    std::string decoded;
    std::string_view key = f.key;
    if (f.key_escaped) key = decoded = decode_json_string(f.key);
    const log::EventField id = log::event_field_of(key);
    if (id != log::EventField::kCount) {
      present |= field_bit(id);
      const int slot = kSlotOf[static_cast<std::size_t>(id)];
      if (slot >= 0) read[slot] = f;
    } else if (key == log::line_field_name(log::LineField::kSummarySchema)) {
      schema = f;
    } else if (key == log::line_field_name(log::LineField::kSummaryDevices)) {
      devices = f;
    }
  }
};

std::string text_of(const JsonField& f) {
  return f.value_escaped ? decode_json_string(f.value) : std::string(f.value);
}

bool is_null(const std::optional<JsonField>& f) {
  return f && f->kind == JsonKind::kLiteral && f->value == "null";
}

// The kind of an event of the action (its log name): kOther for an action that is none of the
// log's or that the replay skips.
void set_kind(std::string_view action, std::uint64_t requested_by, LogEvent& e) {
  log::LogAction logged = log::LogAction::kCount;
  if (!log::action_from_name(action, &logged)) return;  // no action of the log: skipped
  switch (logged) {
    case log::LogAction::kAlloc:
      e.kind = EventKind::kAlloc;
      break;
    case log::LogAction::kFreeRequested:
      e.kind = EventKind::kFree;
      break;
    case log::LogAction::kFreeCompleted:
      e.kind = EventKind::kFreeCompleted;
      break;
    case log::LogAction::kSegmentFree:
    case log::LogAction::kSegmentMap:
    case log::LogAction::kSegmentUnmap:
      e.kind = EventKind::kPoolOther;
      break;
    case log::LogAction::kOom:
      e.kind = EventKind::kOom;
      break;
    case log::LogAction::kEmptyCache:
      e.kind = EventKind::kEmptyCache;
      e.requested_from_outside = requested_by != 0;
      break;
    case log::LogAction::kSegmentAlloc:
      e.kind = EventKind::kSegmentAlloc;
      break;
    case log::LogAction::kContextDropped:
      e.kind = EventKind::kContextDropped;
      break;
    case log::LogAction::kSegmentRefused:
      e.kind = EventKind::kSegmentRefused;
      break;
    case log::LogAction::kIdleRelease:
      e.kind = EventKind::kIdleRelease;
      break;
    default:
      break;  // the shim's other actions: nothing to replay
  }
}

// The fast path: an event line in the writers' form (log/read/writer_line.h), read in one pass
// into exactly the event the general path below gives it. false: a line the general path judges.
bool writer_event(std::string_view line, LogEvent& e) {
  log::WriterLine w;
  if (!log::scan_writer_line(line, log::kEveryEventField, &w)) return false;
  // A definition line of Python stacks with an event's fields is not an event: the general path's.
  if (definition_kind(w[log::EventField::kAction].text) != DefinitionKind::kNone) return false;
  using F = log::EventField;
  const auto optional = [&](F f) { return w.has(f) ? w[f].value : 0; };
  e.t_ns = w[F::kTNs].value;
  e.tid = static_cast<std::uint32_t>(w[F::kTid].value);  // as the general path
  e.device = static_cast<int>(w[F::kDev].value);
  e.ctx = static_cast<int>(optional(F::kCtx));
  e.ptr = w[F::kPtr].value;
  e.size = w[F::kSize].value;
  e.stream = optional(F::kStream);
  set_kind(w[F::kAction].text, optional(F::kRequestedBy), e);
  return true;
}

ParsedLine malformed(std::string why) {
  ParsedLine out;
  out.kind = LineKind::kMalformed;
  out.problem = std::move(why);
  return out;
}

}  // namespace

std::string too_long_problem() {
  std::string text = "longer than 64 MiB (";   // appended, not +: GCC 12's -Wstringop-overflow
  text += std::to_string(log::kMaxLineBytes);  // misreads the temporaries under LTO
  text += " bytes)";
  return text;
}

ParsedLine parse_log_line(std::string_view line, LogHeader* header) {
  ParsedLine out;
  if (writer_event(line, out.event)) {
    out.kind = LineKind::kEvent;
    return out;
  }
  bool blank = true;
  for (const char c : line) {
    if (c != ' ' && c != '\t' && c != '\r') {
      blank = false;
      break;
    }
  }
  if (blank) return out;

  Fields f;
  if (!scan_flat_object(line, [&](const JsonField& field) { f.take(field); })) {
    return malformed("not one JSON object (strict JSON, at most 64 levels deep)");
  }
  const auto& action_field = f[log::EventField::kAction];
  if (!action_field || is_null(action_field)) {  // no action: a header, or nothing
    if (!f.schema) return malformed("a JSON object without action");
    const std::string schema = f.schema->kind == JsonKind::kString ? text_of(*f.schema) : "";
    if (schema.rfind("cudapool.log/", 0) != 0) {
      return malformed("schema is not a string cudapool.log/N");
    }
    out.kind = LineKind::kHeader;
    LogHeader scratch;
    if (!parse_header(line, header != nullptr ? *header : scratch, out.problem)) {
      out.kind = LineKind::kMalformed;
    }
    return out;
  }
  if (action_field->kind != JsonKind::kString) return malformed("action is not a string");
  const std::string action = text_of(*action_field);
  out.kind = LineKind::kEvent;
  if (action == log::kSummaryAction) {  // the summary line at exit: statistics, nothing to replay
    if (f.devices && !is_null(f.devices) &&
        !(f.devices->kind == JsonKind::kNested && f.devices->value[0] == '{')) {
      return malformed("summary devices is not an object");
    }
    return out;
  }
  // A definition line of Python stacks: checked, not an event.
  if (const DefinitionKind def = definition_kind(action); def != DefinitionKind::kNone) {
    const DefinitionLine d = read_definition_line(line, def);
    if (!d.why.empty()) return malformed(d.why);
    out.kind = LineKind::kDefinition;
    out.definition = def;
    out.definition_id = d.id;
    return out;
  }

  // Every event, of any action: the fields log/fields.def says every action carries, each of its
  // kind and range.
  if ((f.present & kRequired) != kRequired) {
    for (std::size_t i = 0; i < log::kEventFieldCount; ++i) {
      const auto id = static_cast<log::EventField>(i);
      if ((kRequired & field_bit(id)) != 0 && (f.present & field_bit(id)) == 0) {
        return malformed(action + " event without " + std::string(log::event_field_name(id)));
      }
    }
  }
  using F = log::EventField;
  // The field's value as an unsigned integer below limit (0: 2^64), when it is there.
  const auto uint = [&](F id, std::uint64_t limit, std::uint64_t& value) {
    if (!f[id]) return std::string();
    const auto v = parse_uint(*f[id]);
    if (!v || (limit != 0 && *v >= limit)) {
      return std::string(log::event_field_name(id)) + " is not an integer from 0 to " +
             (limit == 0 ? "2^64-1" : std::to_string(limit - 1));
    }
    value = *v;
    return std::string();
  };
  const auto hex = [&](F id, std::uint64_t& value) {
    if (!f[id]) return std::string();
    const auto v = parse_hex(*f[id]);
    if (!v) return std::string(log::event_field_name(id)) + " is not a hex string below 2^64";
    value = *v;
    return std::string();
  };
  LogEvent& e = out.event;
  std::uint64_t seq = 0, dev = 0, ctx = 0, tid = 0, block_size = 0, segment = 0;
  std::string why = uint(F::kSeq, 0, seq);
  if (why.empty()) why = uint(F::kTNs, 0, e.t_ns);
  if (why.empty()) why = uint(F::kTid, 0, tid);
  if (why.empty()) why = uint(F::kDev, kDeviceLimit, dev);
  if (why.empty()) why = uint(F::kSize, 0, e.size);
  if (why.empty()) why = hex(F::kPtr, e.ptr);
  if (why.empty()) why = uint(F::kCtx, kContextLimit, ctx);
  if (why.empty()) why = uint(F::kBlockSize, 0, block_size);
  if (why.empty()) why = hex(F::kSegment, segment);
  if (why.empty()) why = hex(F::kStream, e.stream);
  std::uint64_t requested_by = 0;
  if (why.empty()) why = uint(F::kRequestedBy, 0, requested_by);
  if (!why.empty()) return malformed(action + " event: " + why);
  e.device = static_cast<int>(dev);
  e.ctx = static_cast<int>(ctx);
  e.tid = static_cast<std::uint32_t>(tid);  // gettid() fits (pid_max <= 2^22)

  set_kind(action, requested_by, e);
  return out;
}

}  // namespace cudapool::replay
