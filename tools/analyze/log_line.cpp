// tools/analyze/log_line.cpp: see log_line.h.
#include "tools/analyze/log_line.h"

#include "log/record.h"
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
  return f.kind == replay::JsonKind::kNumber &&
         f.value.find_first_of(".eE") == std::string_view::npos;
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

// check_id: an integer below limit (a device ordinal, a context number), or why not.
std::optional<std::uint64_t> id_field(const char* name, const JsonField& f, std::uint64_t limit,
                                      std::string* why) {
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
  if (f.kind == replay::JsonKind::kString) {
    if (const auto v = replay::parse_hex(f)) return v;
    const std::string text = text_of(f);
    if (is_hex_digits(text)) {
      *why = std::string(name) + " " + std::string(first_chars(text, 40)) +
             " is not below 2**64";
      return std::nullopt;
    }
  }
  *why = std::string(name) + " is not a hex string";
  return std::nullopt;
}

}  // namespace

void RawFields::clear() {
  *this = RawFields{};
}

void RawFields::take(const JsonField& f) {
  std::string decoded;
  std::string_view key = f.key;
  if (f.key_escaped) key = decoded = replay::decode_json_string(f.key);
  if (key.empty()) return;
  std::optional<JsonField>* slot = nullptr;
  switch (key[0]) {
    case 'a':
      slot = key == "action" ? &action : key == "allocated" ? &figures[6] : nullptr;
      break;
    case 'b':
      slot = key == "block_size" ? &block_size : key == "backtrace" ? &backtrace : nullptr;
      break;
    case 'c':
      slot = key == "ctx"         ? &ctx
             : key == "cache_hit" ? &cache_hit
             : key == "cause"     ? &cause
             : key == "cap"       ? &figures[4]
                                  : nullptr;
      break;
    case 'd':
      slot = key == "dev"            ? &dev
             : key == "devices"      ? &devices
             : key == "device_total" ? &figures[2]
             : key == "device_free"  ? &figures[3]
                                     : nullptr;
      break;
    case 'f':
      slot = key == "free_blocks" ? &figures[7] : nullptr;
      break;
    case 'l':
      slot = key == "largest_free_block" ? &figures[8] : nullptr;
      break;
    case 'p':
      slot = key == "ptr" ? &ptr : nullptr;
      break;
    case 'r':
      slot = key == "reserved" ? &figures[5] : nullptr;
      break;
    case 's':
      slot = key == "size"           ? &size
             : key == "seq"          ? &seq
             : key == "segment"      ? &segment
             : key == "stream"       ? &stream
             : key == "schema"       ? &schema
             : key == "segment_size" ? &figures[1]
                                     : nullptr;
      break;
    case 't':
      slot = key == "t_ns" ? &t_ns : key == "tid" ? &tid : nullptr;
      break;
    default:
      break;
  }
  if (slot != nullptr) *slot = f;
  if (key == "block_size") figures[0] = f;
}

std::optional<std::uint64_t> uint_field(const char* name, const JsonField& f, std::string* why) {
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

const Line& LineDecoder::decode(std::string_view text, bool has_newline) {
  line_.problem.clear();
  line_.object.reset();
  raw_.clear();
  object_ = action_set_ = false;
  const auto malformed = [&](std::string why) -> const Line& {
    line_.kind = LineKind::kMalformed;
    line_.problem = "malformed: " + why;
    return line_;
  };
  if (text.find_first_not_of(" \t\r") == std::string_view::npos &&
      invalid_utf8_at(text) == std::string_view::npos) {
    line_.kind = LineKind::kBlank;
    return line_;
  }
  if (!replay::scan_flat_object(text, [&](const JsonField& f) { raw_.take(f); })) {
    LineVerdict v = judge_line(text, has_newline);
    if (v.verdict == Verdict::kBlank) {
      line_.kind = LineKind::kBlank;
      return line_;
    }
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
  const std::pair<const char*, const std::optional<JsonField>*> integers[] = {
      {"seq", &raw_.seq}, {"t_ns", &raw_.t_ns}, {"tid", &raw_.tid},
      {"dev", &raw_.dev}, {"size", &raw_.size}};
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
  if (raw_.stream && !hex_field("stream", *raw_.stream, &why)) return bad(why);
  l.kind = LineKind::kEvent;
  log::LogAction a{};
  e.action = log::action_from_name(action, &a) ? static_cast<int>(a) : kUnknownAction;
  e.action_name = action;
  e.cache_hit = raw_.cache_hit && raw_.cache_hit->kind == replay::JsonKind::kLiteral &&
                raw_.cache_hit->value == "true";
  e.raw = &raw_;
}

}  // namespace cudapool::analyze
