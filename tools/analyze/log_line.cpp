// SPDX-License-Identifier: Apache-2.0
// tools/analyze/log_line.cpp: see log_line.h.
#include "tools/analyze/log_line.h"

#include "log/record.h"
#include "tools/analyze/fast_line.h"
#include "tools/analyze/line_verdict.h"

namespace cudapool::analyze {

namespace {

std::string text_of(const JsonField& f) {
  return f.value_escaped ? replay::decode_json_string(f.value) : std::string(f.value);
}

bool is_null(const std::optional<JsonField>& f) {
  return f && f->kind == replay::JsonKind::kLiteral && f->value == "null";
}

bool is_int(const JsonField& f) {
  if (f.kind != replay::JsonKind::kNumber) return false;
  for (const char c : f.value) {
    if (c == '.' || c == 'e' || c == 'E') return false;
  }
  return true;
}

// The integer's text as Python prints it (json_value.h integer_text).
std::string int_text(const JsonField& f) {
  JsonValue v;
  v.type = JsonValue::Type::kNumber;
  v.text.assign(f.value);
  return v.integer_text();
}

bool negative(const JsonField& f) {
  return f.value.size() > 1 && f.value[0] == '-' && f.value != "-0";
}

// The common case of an unsigned integer: 1 to 19 digits, which no uint64 overflows.
std::optional<std::uint64_t> plain_digits(const JsonField& f) {
  if (f.kind != replay::JsonKind::kNumber || f.value.empty() || f.value.size() > 19) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  for (const char c : f.value) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// check_id: an integer below limit (a device ordinal, a context number), or why not.
std::optional<std::uint64_t> id_field(const char* name, const JsonField& f, std::uint64_t limit,
                                      std::string* why) {
  if (const auto v = plain_digits(f); v && *v < limit) return v;
  if (!is_int(f)) {
    *why = std::string(name) + " is not an integer";
    return std::nullopt;
  }
  const auto v = replay::parse_uint(f);
  if (!v || *v >= limit) {
    *why = std::string(name) + " is " + int_text(f) + ", not " +
           (limit == kDeviceLimit ? "a device ordinal" : "a context number") + " (0 to " +
           std::to_string(limit - 1) + ")";
    return std::nullopt;
  }
  return v;
}

// check_hex: a hex string below 2^64, or why not.
std::optional<std::uint64_t> hex_field(const char* name, const JsonField& f, std::string* why) {
  // The common case: "0x" and 1 to 16 hex digits, no escape.
  if (f.kind == replay::JsonKind::kString && !f.value_escaped && f.value.size() >= 3 &&
      f.value.size() <= 18 && f.value[0] == '0' && (f.value[1] == 'x' || f.value[1] == 'X')) {
    std::uint64_t v = 0;
    bool digits = true;
    for (std::size_t i = 2; i < f.value.size(); ++i) {
      const char c = f.value[i];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) {
        digits = false;
        break;
      }
      v = v << 4 | static_cast<std::uint64_t>(d);
    }
    if (digits) return v;
  }
  if (f.kind == replay::JsonKind::kString) {
    if (const auto v = replay::parse_hex(f)) return v;
    const std::string text = text_of(f);
    if (is_hex_digits(text)) {
      *why = std::string(name) + " " + std::string(first_chars(text, 40)) + " is not below 2**64";
      return std::nullopt;
    }
  }
  *why = std::string(name) + " is not a hex string";
  return std::nullopt;
}

}  // namespace

void RawFields::clear() {
  for (auto* f : {&action,    &schema, &seq,        &t_ns,    &tid,    &dev,         &ctx,
                  &ptr,       &size,   &block_size, &segment, &stream, &devices,     &cache_hit,
                  &backtrace, &cause,  &entry,      &caller,  &error,  &python_stack}) {
    f->reset();
  }
  for (auto& f : figures) f.reset();
}

std::optional<JsonField>* RawFields::slot(log::EventField f) {
  using F = log::EventField;
  switch (f) {
    case F::kSeq:
      return &seq;
    case F::kTNs:
      return &t_ns;
    case F::kTid:
      return &tid;
    case F::kDev:
      return &dev;
    case F::kCtx:
      return &ctx;
    case F::kAction:
      return &action;
    case F::kPtr:
      return &ptr;
    case F::kSize:
      return &size;
    case F::kBlockSize:
      return &block_size;
    case F::kSegment:
      return &segment;
    case F::kStream:
      return &stream;
    case F::kCacheHit:
      return &cache_hit;
    case F::kBacktrace:
      return &backtrace;
    case F::kCause:
      return &cause;
    case F::kEntry:
      return &entry;
    case F::kCaller:
      return &caller;
    case F::kError:
      return &error;
    case F::kPythonStack:
      return &python_stack;
    case F::kSegmentSize:
      return &figures[1];
    case F::kDeviceTotal:
      return &figures[2];
    case F::kDeviceFree:
      return &figures[3];
    case F::kCap:
      return &figures[4];
    case F::kReserved:
      return &figures[5];
    case F::kAllocated:
      return &figures[6];
    case F::kFreeBlocks:
      return &figures[7];
    case F::kLargestFreeBlock:
      return &figures[8];
    default:
      return nullptr;
  }
}

void RawFields::take(const JsonField& f) {
  std::string decoded;
  std::string_view key = f.key;
  if (f.key_escaped) key = decoded = replay::decode_json_string(f.key);
  // The header's keys the engine reads, then the event fields (log/fields.def) it keeps.
  if (key == "schema") {
    schema = f;
  } else if (key == "devices") {
    devices = f;
  } else if (const log::EventField id = log::event_field_of(key); id != log::EventField::kCount) {
    if (std::optional<JsonField>* kept = slot(id)) *kept = f;
    if (id == log::EventField::kBlockSize) figures[0] = f;  // an oom event's first figure
  }
}

std::optional<std::uint64_t> uint_field(const char* name, const JsonField& f, std::string* why) {
  if (const auto v = plain_digits(f)) return v;
  if (!is_int(f)) {
    *why = std::string(name) + " is not an integer";
    return std::nullopt;
  }
  if (negative(f)) {
    *why = std::string(name) + " is negative (" + int_text(f) + ")";
    return std::nullopt;
  }
  const auto v = replay::parse_uint(f);
  if (!v) *why = std::string(name) + " is " + int_text(f) + ", not below 2**64";
  return v;
}

const Line& LineDecoder::decode(std::string_view text) {
  line_.problem.clear();
  line_.problem_if_last.clear();
  line_.object.reset();
  if (fast_event_line(text, raw_, &action_, line_.event)) {  // the writers' event lines
    object_ = action_set_ = true;
    line_.kind = LineKind::kEvent;
    line_.event.action_name = action_;
    line_.event.raw = &raw_;
    return line_;
  }
  raw_.clear();
  object_ = action_set_ = false;
  const auto malformed = [&](std::string why) -> const Line& {
    line_.kind = LineKind::kMalformed;
    line_.problem = "malformed: " + why;
    return line_;
  };
  const bool maybe_blank = text.empty() || text[0] == ' ' || text[0] == '\t' || text[0] == '\r';
  if (maybe_blank && text.find_first_not_of(" \t\r") == std::string_view::npos) {
    line_.kind = LineKind::kBlank;
    return line_;
  }
  if (!replay::scan_flat_object(text, [&](const JsonField& f) { raw_.take(f); })) {
    LineVerdict v = judge_line(text, true);
    if (v.verdict == Verdict::kBlank) {
      line_.kind = LineKind::kBlank;
      return line_;
    }
    if (v.at_end) line_.problem_if_last = "malformed: " + judge_line(text, false).why;
    return malformed(std::move(v.why));
  }
  object_ = true;
  if (!raw_.action || is_null(raw_.action)) {
    if (!raw_.schema) return malformed("a JSON object without action");
    line_.object = parse_json(text);
    if (!line_.object) return malformed("not JSON (the header cannot be read)");
    line_.kind = LineKind::kHeader;
    return line_;
  }
  if (raw_.action->kind != replay::JsonKind::kString) return malformed("action is not a string");
  action_ = text_of(*raw_.action);
  action_set_ = true;
  if (action_ == "summary") {
    if (raw_.devices && !is_null(raw_.devices) &&
        !(raw_.devices->kind == replay::JsonKind::kNested && raw_.devices->value[0] == '{')) {
      return malformed("summary devices is not an object");
    }
    line_.object = parse_json(text);
    if (!line_.object) return malformed("not JSON (the summary cannot be read)");
    line_.kind = LineKind::kSummary;
    return line_;
  }
  if (const auto def = replay::definition_kind(action_); def != replay::DefinitionKind::kNone) {
    line_.definition = replay::read_definition_line(text, def);
    if (!line_.definition.why.empty()) return malformed(line_.definition.why);
    line_.kind = LineKind::kDefinition;
    return line_;
  }
  event_fields(action_);
  return line_;
}

void LineDecoder::event_fields(const std::string& action) {
  Line& l = line_;
  const auto bad = [&](const std::string& why) {
    l.kind = LineKind::kMalformed;
    l.problem = "malformed: " + why;
  };
  const std::pair<const char*, const std::optional<JsonField>*> required[] = {
      {"seq", &raw_.seq}, {"t_ns", &raw_.t_ns}, {"tid", &raw_.tid},
      {"dev", &raw_.dev}, {"ptr", &raw_.ptr},   {"size", &raw_.size}};
  for (const auto& [name, field] : required) {
    if (!*field) return bad(std::string("event without '") + name + "'");
  }
  const std::pair<const char*, const std::optional<JsonField>*> integers[] = {{"seq", &raw_.seq},
                                                                              {"t_ns", &raw_.t_ns},
                                                                              {"tid", &raw_.tid},
                                                                              {"dev", &raw_.dev},
                                                                              {"size", &raw_.size}};
  for (const auto& [name, field] : integers) {
    if (!is_int(**field)) return bad(std::string(name) + " is not an integer");
  }
  std::string why;
  Event& e = l.event;
  e = Event{};
  const auto dev = id_field("dev", *raw_.dev, kDeviceLimit, &why);
  if (!dev) return bad(why);
  e.dev = static_cast<int>(*dev);
  std::uint64_t* const out[] = {&e.seq, &e.t_ns, &e.tid, &e.size};
  const char* const names[] = {"seq", "t_ns", "tid", "size"};
  const std::optional<JsonField>* fields[] = {&raw_.seq, &raw_.t_ns, &raw_.tid, &raw_.size};
  for (int i = 0; i < 4; ++i) {
    const auto v = uint_field(names[i], **fields[i], &why);
    if (!v) return bad(why);
    *out[i] = *v;
  }
  const auto ptr = hex_field("ptr", *raw_.ptr, &why);
  if (!ptr) return bad(why);
  e.ptr = *ptr;
  if (raw_.ctx) {
    const auto ctx = id_field("ctx", *raw_.ctx, kContextLimit, &why);
    if (!ctx) return bad(why);
    e.ctx = static_cast<int>(*ctx);
  }
  e.block_size = e.size;
  if (raw_.block_size) {
    const auto v = uint_field("block_size", *raw_.block_size, &why);
    if (!v) return bad(why);
    e.block_size = *v;
  }
  if (raw_.segment) {
    const auto v = hex_field("segment", *raw_.segment, &why);
    if (!v) return bad(why);
    e.has_segment = true;
    e.segment = *v;
  }
  if (raw_.stream) {
    const auto v = hex_field("stream", *raw_.stream, &why);
    if (!v) return bad(why);
    e.stream = *v;
  }
  l.kind = LineKind::kEvent;
  log::LogAction a{};
  e.action = log::action_from_name(action, &a) ? static_cast<int>(a) : kUnknownAction;
  e.action_name = action;
  e.cache_hit = raw_.cache_hit && raw_.cache_hit->kind == replay::JsonKind::kLiteral &&
                raw_.cache_hit->value == "true";
  e.raw = &raw_;
}

}  // namespace cudapool::analyze
