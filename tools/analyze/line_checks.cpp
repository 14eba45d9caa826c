// SPDX-License-Identifier: Apache-2.0
// tools/analyze/line_checks.cpp: see line_checks.h.
#include "tools/analyze/line_checks.h"

#include <optional>
#include <utility>
#include <vector>

namespace cudapool::analyze {

namespace {

using Fields = std::vector<std::pair<const char*, Kind>>;

// vocabulary.py HEADER_FIELDS + HEADER_OPTIONAL_FIELDS + HEADER_RANK_FIELDS
const Fields kHeaderFields = {
    {"schema", Kind::kString},      {"version", Kind::kString},     {"pid", Kind::kUint},
    {"host", Kind::kString},        {"executable", Kind::kString},  {"argv", Kind::kStringList},
    {"start_time", Kind::kString},  {"start_unix_ns", Kind::kUint}, {"conf", Kind::kString},
    {"conf_source", Kind::kString}, {"options", Kind::kObject},     {"devices", Kind::kList},
    {"start_t_ns", Kind::kUint},    {"rank", Kind::kUint},          {"rank_from", Kind::kString},
    {"environment", Kind::kObject}, {"env", Kind::kObject}};
const Fields kHeaderDeviceFields = {
    {"id", Kind::kInt}, {"name", Kind::kString}, {"total_memory", Kind::kUint}};
// SUMMARY_FIELDS + SUMMARY_OPTIONAL_FIELDS, less schema, action and devices
const Fields kSummaryFields = {{"seq", Kind::kUint},
                               {"t_ns", Kind::kUint},
                               {"events", Kind::kUint},
                               {"leaks", Kind::kList},
                               {"log_errors", Kind::kObject},
                               {"modules", Kind::kList},
                               {"leaks_omitted", Kind::kObject},
                               {"python_stacks", Kind::kObject}};
const Fields kLeakFields = {{"dev", Kind::kInt},   {"ptr", Kind::kHex},
                            {"size", Kind::kUint}, {"block_size", Kind::kUint},
                            {"seq", Kind::kUint},  {"t_ns", Kind::kUint},
                            {"tid", Kind::kUint},  {"backtrace", Kind::kStringList}};
const Fields kModuleFields = {{"base", Kind::kHex},
                              {"end", Kind::kHex},
                              {"path", Kind::kString},
                              {"bias", Kind::kHex},
                              {"build_id", Kind::kString}};
constexpr std::size_t kModuleRequired = 3;  // base, end, path; bias and build_id when set
const Fields kLogErrorFields = {{"write_failed", Kind::kBool}, {"records_lost", Kind::kUint}};
const Fields kLeaksOmitted = {
    {"count", Kind::kUint}, {"size", Kind::kUint}, {"block_size", Kind::kUint}};

// The first field of entry that is present and not of its kind: its name and "NAME is not ...".
bool first_bad(const JsonValue& entry, const Fields& fields, std::string* name, std::string* why) {
  for (const auto& [n, kind] : fields) {
    const JsonValue* v = entry.find(n);
    if (v != nullptr && !fits(*v, kind)) {
      *name = n;
      *why = std::string(n) + " is not " + kind_text(kind);
      return true;
    }
  }
  return false;
}

bool module_ok(std::size_t i, const JsonValue& m, const ProblemFn& problem) {
  std::string why;
  if (!m.is_object()) {
    why = "not an object";
  } else {
    for (std::size_t f = 0; f < kModuleRequired; ++f) {
      const char* n = kModuleFields[f].first;
      if (m.find(n) == nullptr) {
        why = std::string("no ") + n;
        break;
      }
    }
    std::string name;
    if (why.empty()) first_bad(m, kModuleFields, &name, &why);
    if (why.empty() && *hex_value(m.find("base")->text) >= *hex_value(m.find("end")->text)) {
      why = "base " + m.find("base")->text + " is not below end " + m.find("end")->text;
    }
  }
  if (!why.empty()) problem("summary modules[" + std::to_string(i) + "]: " + why + ": ignored");
  return why.empty();
}

// A summary's device key as Python's key.isdigit() and int(key) < 65536 take it ("007" is 7).
std::optional<int> device_ordinal(const std::string& key) {
  if (key.empty()) return std::nullopt;
  for (const char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  const std::size_t nonzero = key.find_first_not_of('0');
  if (nonzero == std::string::npos) return 0;
  if (key.size() - nonzero > 5) return std::nullopt;
  const unsigned long v = std::stoul(key.substr(nonzero));
  if (v >= kDeviceIds) return std::nullopt;
  return static_cast<int>(v);
}

}  // namespace

void check_header(JsonValue& header, const ProblemFn& problem, DeviceGate& gate) {
  for (const auto& [name, kind] : kHeaderFields) {
    const JsonValue* v = header.find(name);
    if (v != nullptr && !fits(*v, kind)) {
      problem(std::string("header field ") + name + " is not " + kind_text(kind) + ": ignored");
      header.erase(name);
    }
  }
  JsonValue* devices = header.find("devices");
  if (devices == nullptr) return;
  std::vector<JsonValue> kept;
  std::vector<int> ids;
  for (std::size_t i = 0; i < devices->items.size(); ++i) {
    JsonValue& d = devices->items[i];
    std::string why, name;
    if (!d.is_object()) {
      why = "not an object";
    } else if (!first_bad(d, kHeaderDeviceFields, &name, &why)) {
      if (const JsonValue* id = d.find("id")) {
        const Figure n = *id->integer();
        if (n < 0 || n >= static_cast<Figure>(kDeviceIds)) {
          why = "id " + id->integer_text() + " is not a device ordinal (0 to " +
                std::to_string(kDeviceIds - 1) + ")";
        }
      }
    }
    if (why.empty()) {
      if (const JsonValue* id = d.find("id")) ids.push_back(static_cast<int>(*id->integer()));
      kept.push_back(std::move(d));
    } else {
      problem("header devices[" + std::to_string(i) + "]: " + why + ": ignored");
    }
  }
  gate.list_header(ids);
  if (kept.size() > kMaxDevices) {
    problem("header devices: " + std::to_string(kept.size()) + " entries; the first " +
            std::to_string(kMaxDevices) +
            " are kept (the replay's limit), the others only admit their devices' events");
    kept.resize(kMaxDevices);
  }
  devices->items = std::move(kept);
}

void check_summary(JsonValue& summary, const ProblemFn& problem, const DeviceGate& gate) {
  for (const auto& [name, kind] : kSummaryFields) {
    const JsonValue* v = summary.find(name);
    if (v != nullptr && !fits(*v, kind)) {
      problem(std::string("summary field ") + name + " is not " + kind_text(kind) + ": ignored");
      summary.erase(name);
    }
  }
  JsonValue* devices = summary.find("devices");
  std::size_t untaken = 0;
  if (devices != nullptr && devices->is_object()) {
    auto& members = devices->members;
    for (std::size_t i = 0; i < members.size();) {
      const std::string& key = members[i].first;
      JsonValue& entry = members[i].second;
      const std::optional<int> ordinal = device_ordinal(key);
      if (!ordinal) {
        problem("summary device " + py_repr(std::string_view(key)) +
                " is not a device ordinal: ignored");
        members.erase(members.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (!entry.is_object()) {
        problem("summary device " + key + " is not an object: ignored");
        members.erase(members.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      const int dev = *ordinal;
      if (!gate.may_take(dev)) {
        ++untaken;
        members.erase(members.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (JsonValue* stats = entry.find("stats"); stats != nullptr && !stats->is_null()) {
        if (!stats->is_object()) {
          problem("summary device " + key + ": stats is not an object: ignored");
          entry.erase("stats");
        } else {
          auto& s = stats->members;
          for (std::size_t k = 0; k < s.size();) {
            if (!fits(s[k].second, Kind::kInt)) {
              problem("summary device " + key + ": statistic " + s[k].first + " is not " +
                      kind_text(Kind::kInt) + ": ignored");
              s.erase(s.begin() + static_cast<std::ptrdiff_t>(k));
            } else {
              ++k;
            }
          }
        }
      }
      ++i;
    }
  }
  if (untaken != 0) {
    problem("summary devices: " + std::to_string(untaken) +
            " entries of devices whose events are skipped (see the notes), or beyond the first " +
            std::to_string(kMaxDevices) + " devices: ignored");
  }
  if (JsonValue* leaks = summary.find("leaks")) {
    std::vector<JsonValue> kept;
    for (std::size_t i = 0; i < leaks->items.size(); ++i) {
      JsonValue& leak = leaks->items[i];
      if (!leak.is_object()) {
        problem("summary leaks[" + std::to_string(i) + "] is not an object: ignored");
        continue;
      }
      for (const auto& [name, kind] : kLeakFields) {
        JsonValue* x = leak.find(name);
        if (x == nullptr) continue;
        bool ok = fits(*x, kind);
        const bool dev = std::string_view(name) == "dev";
        if (ok && dev) {
          const Figure n = *x->integer();
          ok = n >= 0 && n < static_cast<Figure>(kDeviceIds);
        }
        if (!ok) {
          problem("summary leaks[" + std::to_string(i) + "]: " + name + " is not " +
                  (dev ? "a device ordinal" : kind_text(kind)) + ": left out");
          *x = JsonValue{};
        }
      }
      kept.push_back(std::move(leak));
    }
    leaks->items = std::move(kept);
  }
  if (JsonValue* modules = summary.find("modules")) {
    std::vector<JsonValue> kept;
    for (std::size_t i = 0; i < modules->items.size(); ++i) {
      if (module_ok(i, modules->items[i], problem)) kept.push_back(std::move(modules->items[i]));
    }
    modules->items = std::move(kept);
  }
  const std::pair<const char*, const Fields*> parts[] = {{"log_errors", &kLogErrorFields},
                                                         {"leaks_omitted", &kLeaksOmitted}};
  for (const auto& [field, fields] : parts) {
    JsonValue* entry = summary.find(field);
    if (entry == nullptr || entry->is_null()) continue;
    std::string name, why;
    while (first_bad(*entry, *fields, &name, &why)) {
      problem(std::string("summary ") + field + ": " + why + ": ignored");
      entry->erase(name);
    }
  }
  if (const JsonValue* omitted = summary.find("leaks_omitted");
      omitted != nullptr && !omitted->is_null()) {
    for (const char* name : kLeaksOmittedFields) {
      if (omitted->find(name) == nullptr) {
        problem("summary leaks_omitted: not {count, size, block_size}: ignored");
        summary.erase("leaks_omitted");
        break;
      }
    }
  }
}

}  // namespace cudapool::analyze
