// tools/replay/log_event.cpp: see log_event.h.
#include "tools/replay/log_event.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "log/read/line_reader.h"
#include "log/record.h"
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
  auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    json = nlohmann::json::parse(without_overflowing_numbers(line), nullptr, false);
  }
  if (json.is_discarded() || !json.is_object()) {
    problem = "header is not valid JSON";
    return false;
  }
  header.schema = json.value("schema", "");
  if (auto it = json.find("options"); it != json.end() && it->is_object()) {
    header.fences_logged = it->contains("reuse_fence");
  }
  if (auto it = json.find("host"); it != json.end() && it->is_string()) {
    header.host = it->get<std::string>();
  }
  const auto number = [&](const char* key, std::uint64_t& out) {
    if (auto it = json.find(key); it != json.end() && it->is_number_unsigned()) {
      out = it->get<std::uint64_t>();
    }
  };
  number("pid", header.pid);
  number("start_unix_ns", header.start_unix_ns);
  number("start_t_ns", header.start_t_ns);
  if (auto it = json.find("conf"); it != json.end() && it->is_string()) {
    header.conf = it->get<std::string>();
  }
  if (auto it = json.find("devices"); it != json.end() && it->is_array()) {
    for (const auto& dev : *it) {
      if (!dev.is_object()) continue;
      const auto id = dev.find("id");
      if (id == dev.end() || !id->is_number_integer()) continue;
      // A device ordinal (0 to 65535), as an event's dev; an entry with another is left out.
      const bool in_range = id->is_number_unsigned() && id->get<std::uint64_t>() < kDeviceLimit;
      if (!in_range) continue;
      const int n = static_cast<int>(id->get<std::uint64_t>());
      header.listed_devices.insert(n);
      const auto total = dev.find("total_memory");
      if (total != dev.end() && total->is_number_unsigned()) {
        header.device_memory[n] = total->get<std::uint64_t>();
      }
    }
  }
  return true;
}

// The last occurrence of each field the replay reads (a repeated key: the last one counts, as in
// any JSON reader).
struct Fields {
  std::optional<JsonField> action, schema, seq, t_ns, tid, dev, ctx, ptr, size, block_size, segment,
      stream, devices, requested_by;

  void take(const JsonField& f) {
    std::string decoded;
    std::string_view key = f.key;
    if (f.key_escaped) key = decoded = decode_json_string(f.key);
    if (key.empty()) return;
    std::optional<JsonField>* slot = nullptr;
    switch (key[0]) {
      case 'a':
        slot = key == "action" ? &action : nullptr;
        break;
      case 'b':
        slot = key == "block_size" ? &block_size : nullptr;
        break;
      case 'c':
        slot = key == "ctx" ? &ctx : nullptr;
        break;
      case 'd':
        slot = key == "dev" ? &dev : key == "devices" ? &devices : nullptr;
        break;
      case 'p':
        slot = key == "ptr" ? &ptr : nullptr;
        break;
      case 'r':
        slot = key == "requested_by" ? &requested_by : nullptr;
        break;
      case 's':
        slot = key == "size"      ? &size
               : key == "seq"     ? &seq
               : key == "segment" ? &segment
               : key == "stream"  ? &stream
               : key == "schema"  ? &schema
                                  : nullptr;
        break;
      case 't':
        slot = key == "t_ns" ? &t_ns : key == "tid" ? &tid : nullptr;
        break;
      default:
        break;
    }
    if (slot != nullptr) *slot = f;
  }
};

std::string text_of(const JsonField& f) {
  return f.value_escaped ? decode_json_string(f.value) : std::string(f.value);
}

bool is_null(const std::optional<JsonField>& f) {
  return f && f->kind == JsonKind::kLiteral && f->value == "null";
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
  if (!f.action || is_null(f.action)) {  // no action: a header, or nothing
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
  if (f.action->kind != JsonKind::kString) return malformed("action is not a string");
  const std::string action = text_of(*f.action);
  out.kind = LineKind::kEvent;
  if (action == "summary") {  // the summary line at exit: statistics, nothing to replay
    if (f.devices && !is_null(f.devices) &&
        !(f.devices->kind == JsonKind::kNested && f.devices->value[0] == '{')) {
      return malformed("summary devices is not an object");
    }
    return out;
  }

  // Every event, of any action: the required fields, each of its kind and range.
  const std::pair<const char*, const std::optional<JsonField>*> required[] = {
      {"seq", &f.seq}, {"t_ns", &f.t_ns}, {"tid", &f.tid},
      {"dev", &f.dev}, {"ptr", &f.ptr},   {"size", &f.size}};
  for (const auto& [name, field] : required) {
    if (!*field) return malformed(action + " event without " + name);
  }
  const auto uint = [&](const char* name, const std::optional<JsonField>& field,
                        std::uint64_t limit, std::uint64_t& value) {
    const auto v = parse_uint(*field);
    if (!v || (limit != 0 && *v >= limit)) {
      return std::string(name) + " is not an integer from 0 to " +
             (limit == 0 ? "2^64-1" : std::to_string(limit - 1));
    }
    value = *v;
    return std::string();
  };
  const auto hex = [&](const char* name, const std::optional<JsonField>& field,
                       std::uint64_t& value) {
    const auto v = parse_hex(*field);
    if (!v) return std::string(name) + " is not a hex string below 2^64";
    value = *v;
    return std::string();
  };
  LogEvent& e = out.event;
  std::uint64_t seq = 0, dev = 0, ctx = 0, tid = 0, block_size = 0, segment = 0;
  std::string why = uint("seq", f.seq, 0, seq);
  if (why.empty()) why = uint("t_ns", f.t_ns, 0, e.t_ns);
  if (why.empty()) why = uint("tid", f.tid, 0, tid);
  if (why.empty()) why = uint("dev", f.dev, kDeviceLimit, dev);
  if (why.empty()) why = uint("size", f.size, 0, e.size);
  if (why.empty()) why = hex("ptr", f.ptr, e.ptr);
  if (why.empty() && f.ctx) why = uint("ctx", f.ctx, kContextLimit, ctx);
  if (why.empty() && f.block_size) why = uint("block_size", f.block_size, 0, block_size);
  if (why.empty() && f.segment) why = hex("segment", f.segment, segment);
  if (why.empty() && f.stream) why = hex("stream", f.stream, e.stream);
  std::uint64_t requested_by = 0;
  if (why.empty() && f.requested_by) why = uint("requested_by", f.requested_by, 0, requested_by);
  if (!why.empty()) return malformed(action + " event: " + why);
  e.device = static_cast<int>(dev);
  e.ctx = static_cast<int>(ctx);
  e.tid = static_cast<std::uint32_t>(tid);  // gettid() fits (pid_max <= 2^22)

  log::LogAction logged = log::LogAction::kCount;
  if (!log::action_from_name(action, &logged)) return out;  // no action of the log: skipped
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
    default:
      break;  // the shim's other actions: nothing to replay
  }
  return out;
}

}  // namespace cudapool::replay
