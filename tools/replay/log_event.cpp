// tools/replay/log_event.cpp: see log_event.h.
#include "tools/replay/log_event.h"

#include <nlohmann/json.hpp>

#include "log/record.h"
#include "tools/replay/flat_json.h"

namespace cudapool::replay {

namespace {

bool parse_header(std::string_view line, LogHeader& header, std::string& problem) {
  const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
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
      const auto total = dev.find("total_memory");
      if (id != dev.end() && id->is_number_integer() && total != dev.end() &&
          total->is_number_unsigned()) {
        header.device_memory[id->get<int>()] = total->get<std::uint64_t>();
      }
    }
  }
  return true;
}

}  // namespace

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

  std::string_view action, schema;
  std::optional<std::uint64_t> ptr, size, stream, dev, ctx, t_ns, tid;
  bool bad_number = false;
  const bool ok = scan_flat_object(line, [&](const JsonField& f) {
    if (f.key == "action" && f.kind == JsonKind::kString) {
      action = f.value;
    } else if (f.key == "schema" && f.kind == JsonKind::kString) {
      schema = f.value;
    } else if (f.key == "ptr") {
      ptr = parse_unsigned(f);
      bad_number |= !ptr;
    } else if (f.key == "size") {
      size = parse_unsigned(f);
      bad_number |= !size;
    } else if (f.key == "stream") {
      stream = parse_unsigned(f);
    } else if (f.key == "dev") {
      dev = parse_unsigned(f);
      bad_number |= !dev;
    } else if (f.key == "ctx") {
      ctx = parse_unsigned(f);
      bad_number |= !ctx;
    } else if (f.key == "t_ns") {
      t_ns = parse_unsigned(f);
    } else if (f.key == "tid") {
      tid = parse_unsigned(f);
    }
  });
  if (!ok) {
    out.kind = LineKind::kMalformed;
    out.problem = "not a JSON object";
    return out;
  }
  if (schema.substr(0, 13) == "cudapool.log/" && action == "summary") {
    out.kind = LineKind::kEvent;  // the summary line at exit: statistics, nothing to replay
    return out;
  }
  if (schema.substr(0, 13) == "cudapool.log/") {
    out.kind = LineKind::kHeader;
    LogHeader scratch;
    if (!parse_header(line, header != nullptr ? *header : scratch, out.problem)) {
      out.kind = LineKind::kMalformed;
    }
    return out;
  }

  out.kind = LineKind::kEvent;
  LogEvent& e = out.event;
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
      return out;  // the shim's other actions: nothing to replay
  }
  const bool needs_ptr = e.kind == EventKind::kAlloc || e.kind == EventKind::kFree ||
                         e.kind == EventKind::kFreeCompleted || e.kind == EventKind::kSegmentAlloc;
  const bool needs_size = e.kind == EventKind::kAlloc || e.kind == EventKind::kOom ||
                          e.kind == EventKind::kSegmentAlloc ||
                          e.kind == EventKind::kSegmentRefused;
  if (bad_number || (needs_ptr && !ptr) || (needs_size && !size) || (dev && *dev > 1u << 16) ||
      (ctx && *ctx > 255)) {
    out.kind = LineKind::kMalformed;
    out.problem = std::string(action) + " event without a valid " +
                  (needs_ptr && !ptr     ? "ptr"
                   : needs_size && !size ? "size"
                                         : "number");
    return out;
  }
  e.ptr = ptr.value_or(0);
  e.size = size.value_or(0);
  e.stream = stream.value_or(0);
  e.device = static_cast<int>(dev.value_or(0));
  e.ctx = static_cast<int>(ctx.value_or(0));
  e.t_ns = t_ns.value_or(0);
  e.tid = static_cast<std::uint32_t>(tid.value_or(0));  // gettid() fits (pid_max <= 2^22)
  return out;
}

}  // namespace cudapool::replay
