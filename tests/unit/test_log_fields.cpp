// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_fields.cpp: the writer against the one definition of the log's fields
// (log/fields.def, log/fields.h). Every action is formatted with every optional part off and on,
// and the header and summary with their optional parts off and on; each line's keys must be in the
// table, of its kind, on an action that carries them, and a field the table says the action always
// carries must be there (an oom event's figures: all or none). The checker itself is shown to
// catch an unknown key, a wrong kind, a missing field and a field on the wrong action. Also: the
// table's own consistency and the readers' key lookup (event_field_of).
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "log/fields.h"
#include "log/format.h"
#include "log/record.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::event_field;
using cudapool::log::event_field_carried_by;
using cudapool::log::event_field_of;
using cudapool::log::EventField;
using cudapool::log::FieldKind;
using cudapool::log::FieldPresence;
using cudapool::log::kEventFieldCount;
using cudapool::log::kEventFields;
using cudapool::log::kLineFields;
using cudapool::log::LinePart;
using cudapool::log::LogAction;
using cudapool::log::LogRecord;
using nlohmann::json;

namespace {

bool is_hex(const json& v) {
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  if (s.size() < 3 || s.size() > 18 || s.compare(0, 2, "0x") != 0) return false;
  return s.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
}

bool fits(const json& v, FieldKind kind) {
  switch (kind) {
    case FieldKind::kUint:
      return v.is_number_unsigned();
    case FieldKind::kInt:
      return v.is_number_integer();
    case FieldKind::kHex:
      return is_hex(v);
    case FieldKind::kString:
      return v.is_string();
    case FieldKind::kBool:
      return v.is_boolean();
    case FieldKind::kObject:
      return v.is_object();
    case FieldKind::kList:
      return v.is_array();
    case FieldKind::kHexList:
    case FieldKind::kStringList:
      if (!v.is_array()) return false;
      for (const json& x : v) {
        if (kind == FieldKind::kHexList ? !is_hex(x) : !x.is_string()) return false;
      }
      return true;
  }
  return false;
}

// What is wrong with an event line by the table; empty when nothing.
std::vector<std::string> event_problems(const json& line) {
  std::vector<std::string> out;
  if (!line.is_object() || !line.contains("action") || !line["action"].is_string()) {
    return {"no action"};
  }
  const std::string action = line["action"].get<std::string>();
  int figures = 0, figures_needed = 0;
  for (const auto& [key, value] : line.items()) {
    const EventField f = event_field_of(key);
    if (f == EventField::kCount) {
      out.push_back(key + ": not a field of log/fields.def");
      continue;
    }
    if (!fits(value, event_field(f).kind)) out.push_back(key + ": not of its kind");
    if (!event_field_carried_by(f, action)) out.push_back(key + ": not carried by " + action);
    if (event_field(f).presence == FieldPresence::kWithFigures) ++figures;
  }
  for (std::size_t i = 0; i < kEventFieldCount; ++i) {
    const auto f = static_cast<EventField>(i);
    if (!event_field_carried_by(f, action)) continue;
    const std::string name(kEventFields[i].name);
    if (kEventFields[i].presence == FieldPresence::kWithFigures) ++figures_needed;
    if (kEventFields[i].presence == FieldPresence::kAlways && !line.contains(name)) {
      out.push_back(name + ": missing on " + action);
    }
  }
  if (figures != 0 && figures != figures_needed) out.push_back("some of the oom figures only");
  return out;
}

// What is wrong with an object of a part of the header or summary by the table.
std::vector<std::string> part_problems(const json& object, LinePart part) {
  std::vector<std::string> out;
  if (!object.is_object()) return {"not an object"};
  std::set<std::string> known;
  for (const auto& f : kLineFields) {
    if (f.part != part) continue;
    const std::string name(f.name);
    known.insert(name);
    if (!object.contains(name)) {
      if (f.presence == FieldPresence::kAlways) out.push_back(name + ": missing");
    } else if (!fits(object[name], f.kind)) {
      out.push_back(name + ": not of its kind");
    }
  }
  for (const auto& [key, value] : object.items()) {
    if (known.count(key) == 0) out.push_back(key + ": not a field of log/fields.def");
  }
  return out;
}

json line_of(const LogRecord& r) {
  char buf[cudapool::log::kMaxEventLine];
  const std::size_t n = cudapool::log::format_event(r, buf, sizeof buf);
  REQUIRE(n > 0);
  return json::parse(std::string(buf, n));
}

LogRecord base_record(LogAction action) {
  LogRecord r;
  r.seq = 12;
  r.t_ns = 99;
  r.tid = 4242;
  r.device = 1;
  r.action = action;
  r.ptr = 0x7f0000001000;
  r.size = 1000;
  return r;
}

// Every optional part of a record set; the oom figures with or without their optional ones.
LogRecord full_record(LogAction action, bool figures_optional_parts) {
  LogRecord r = base_record(action);
  r.ctx = 3;
  r.cache_hit = true;
  r.block_size = 1024;
  r.segment = 0x7f0000000000;
  r.stream = 0xabc;
  r.latency_ns = 77;
  r.error = -2;
  r.entry = "cuStreamCreate";
  r.caller = "libtorch_cuda.so(f+0x1)";
  r.requested_by = 777;
  if (action == LogAction::kOom) {
    r.oom = {};
    r.oom.segment_size = 2 << 20;
    r.oom.device_total = 80ull << 30;
    r.oom.device_free = 1 << 20;
    r.oom.device_free_known = figures_optional_parts;
    r.oom.cap = figures_optional_parts ? 40ull << 30 : 0;
    r.oom.reserved = 3 << 20;
    r.oom.allocated = 1 << 20;
    r.oom.free_blocks = 4;
    r.oom.largest_free_block = 4096;
    r.oom.cause = 1;
  } else {
    r.frames = 2;
    r.backtrace[0] = 0x401000;
    r.backtrace[1] = 0x7f12;
  }
  return r;
}

std::string text(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "; ";
  return out;
}

}  // namespace

TEST_CASE("log fields: the table is consistent: distinct names, actions that exist") {
  std::set<std::string_view> names;
  for (const auto& f : kEventFields) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);
    CHECK(!f.meaning.empty());
    std::string_view list = f.actions;
    while (!list.empty()) {
      const std::size_t space = list.find(' ');
      LogAction a{};
      CHECK(cudapool::log::action_from_name(list.substr(0, space), &a));
      list = space == std::string_view::npos ? std::string_view() : list.substr(space + 1);
    }
  }
  std::set<std::pair<LinePart, std::string_view>> line_names;
  for (const auto& f : kLineFields) {
    INFO(f.name);
    CHECK(line_names.insert({f.part, f.name}).second);
    CHECK(f.presence != FieldPresence::kWithFigures);
  }
}

TEST_CASE("log fields: a reader finds every field by its name, and nothing else") {
  for (std::size_t i = 0; i < kEventFieldCount; ++i) {
    INFO(kEventFields[i].name);
    CHECK(event_field_of(kEventFields[i].name) == static_cast<EventField>(i));
    // At the first probe: no two names share a slot of the hash (the lookup's speed).
    namespace d = cudapool::log::fields_detail;
    CHECK(d::kIndex.slot[d::hash(kEventFields[i].name)] == i + 1);
    CHECK(cudapool::log::event_key(static_cast<EventField>(i)).size ==
          kEventFields[i].name.size() + 4);
  }
  for (const char* other : {"", "x", "seqs", "se", "Seq", "schema", "devices", "t_n", "ptr ",
                            "summary", "backtraces", "cause_"}) {
    INFO(other);
    CHECK(event_field_of(other) == EventField::kCount);
  }
}

TEST_CASE("log fields: every action's line, optional parts off and on, matches the table") {
  for (int a = 0; a <= static_cast<int>(cudapool::log::kLastLogAction); ++a) {
    const auto action = static_cast<LogAction>(a);
    for (int variant = 0; variant < 3; ++variant) {
      const LogRecord r = variant == 0 ? base_record(action) : full_record(action, variant == 2);
      const json line = line_of(r);
      INFO(line.dump());
      const auto problems = event_problems(line);
      CHECK(text(problems).empty());
      if (variant > 0) {  // every part the record holds is written
        CHECK(line.contains("block_size"));
        CHECK(line.contains("caller"));
        if (action == LogAction::kOom) CHECK(line.contains("cause"));
        if (action != LogAction::kOom) CHECK(line.contains("backtrace"));
      }
    }
  }
}

TEST_CASE("log fields: the event check fails on an unknown key, a wrong kind, a missing field") {
  const json good = line_of(full_record(LogAction::kAlloc, true));
  REQUIRE(event_problems(good).empty());
  json extra = good;
  extra["colour"] = 1;
  CHECK(text(event_problems(extra)) == "colour: not a field of log/fields.def; ");
  json wrong = good;
  wrong["size"] = "1000";
  CHECK(text(event_problems(wrong)) == "size: not of its kind; ");
  json negative = good;
  negative["seq"] = -1;
  CHECK(text(event_problems(negative)) == "seq: not of its kind; ");
  json missing = good;
  missing.erase("cache_hit");
  CHECK(text(event_problems(missing)) == "cache_hit: missing on alloc; ");
  json stray = line_of(base_record(LogAction::kFreeRequested));
  stray["cache_hit"] = true;
  CHECK(text(event_problems(stray)) == "cache_hit: not carried by free_requested; ");
  json oom = line_of(full_record(LogAction::kOom, false));
  REQUIRE(event_problems(oom).empty());
  oom.erase("reserved");
  CHECK(text(event_problems(oom)) == "some of the oom figures only; ");
}

TEST_CASE("log fields: header and summary lines, optional parts off and on, match the table") {
  for (int variant = 0; variant < 2; ++variant) {
    auto h = logtest::sample_header();
    if (variant == 1) {
      h.start_t_ns = 81270000000;
      h.rank = 3;
      h.rank_from = "RANK";
    }
    const std::string header_line = cudapool::log::format_header(h);
    INFO(header_line);
    const json header = json::parse(header_line);
    CHECK(text(part_problems(header, LinePart::kHeader)).empty());
    CHECK(header.contains("rank") == (variant == 1));
    for (const json& d : header.at("devices")) {
      CHECK(text(part_problems(d, LinePart::kHeaderDevice)).empty());
    }

    cudapool::log::Summary s;
    s.seq = 5;
    s.t_ns = 6;
    s.events = 4;
    s.devices = {{0, cudapool::pool::DeviceStats{}}};
    cudapool::log::Leak leak;
    leak.ptr = 0x7f0000001000;
    leak.size = 1000;
    leak.block_size = 1024;
    leak.seq = 2;
    if (variant == 1) {
      s.fences = {{{"epochs", 3}}};
      leak.frames = {0x401000};
      s.leaks.assign(cudapool::log::kMaxSummaryLeaks + 2, leak);
      s.leaks[1].symbols = {"0x401000 /bin/x(main+0x1)"};
      s.modules = {{0x400000, 0x500000, "/bin/x", 0, ""}};
    } else {
      s.leaks = {leak};
    }
    const std::string summary_line = cudapool::log::format_summary(s);
    const json summary = json::parse(summary_line);
    INFO(summary.dump().substr(0, 2000));
    CHECK(text(part_problems(summary, LinePart::kSummary)).empty());
    CHECK(summary.contains("modules") == (variant == 1));
    CHECK(summary.contains("leaks_omitted") == (variant == 1));
    for (const auto& [id, device] : summary.at("devices").items()) {
      CHECK(text(part_problems(device, LinePart::kSummaryDevice)).empty());
      CHECK(device.contains("fences") == (variant == 1));
    }
    for (const json& l : summary.at("leaks")) {
      CHECK(text(part_problems(l, LinePart::kLeak)).empty());
    }
    CHECK(text(part_problems(summary.at("log_errors"), LinePart::kLogErrors)).empty());
    if (variant == 1) {
      CHECK(summary.at("leaks").at(0).contains("backtrace"));
      CHECK(text(part_problems(summary.at("leaks_omitted"), LinePart::kLeaksOmitted)).empty());
      for (const json& m : summary.at("modules")) {
        CHECK(text(part_problems(m, LinePart::kModule)).empty());
      }
    }
  }
}

TEST_CASE("log fields: the header check fails on an unknown key, a wrong kind, a missing field") {
  const json header = json::parse(cudapool::log::format_header(logtest::sample_header()));
  REQUIRE(part_problems(header, LinePart::kHeader).empty());
  json extra = header;
  extra["colour"] = 1;
  CHECK(text(part_problems(extra, LinePart::kHeader)) == "colour: not a field of log/fields.def; ");
  json wrong = header;
  wrong["pid"] = "4242";
  CHECK(text(part_problems(wrong, LinePart::kHeader)) == "pid: not of its kind; ");
  json missing = header;
  missing.erase("host");
  CHECK(text(part_problems(missing, LinePart::kHeader)) == "host: missing; ");
}
