// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_format.cpp: the lines of the log (log/format.h) read back with
// nlohmann::json: exact event lines, which fields appear for which action and with which JSON type,
// the widest line, the header and summary shapes, string escaping (control characters, quotes,
// invalid UTF-8) and the action names.
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "log/format.h"
#include "log/record.h"
#include "pool/events.h"
#include "tests/unit/catch.h"

using cudapool::log::DeviceInfo;
using cudapool::log::format_event;
using cudapool::log::format_header;
using cudapool::log::format_summary;
using cudapool::log::HeaderInfo;
using cudapool::log::kMaxBacktrace;
using cudapool::log::kMaxEventLine;
using cudapool::log::Leak;
using cudapool::log::LogAction;
using cudapool::log::LogRecord;
using cudapool::log::Module;
using cudapool::log::Summary;
using nlohmann::json;

namespace {

std::string event_line(const LogRecord& r) {
  char buf[kMaxEventLine];
  const std::size_t n = format_event(r, buf, sizeof buf);
  REQUIRE(n > 0);
  return std::string(buf, n);
}

json parse_line(const std::string& line) {
  REQUIRE(!line.empty());
  REQUIRE(line.back() == '\n');
  REQUIRE(line.find('\n') == line.size() - 1);  // one line
  return json::parse(line);
}

const std::vector<LogAction>& all_actions() {
  static const std::vector<LogAction> actions = [] {
    std::vector<LogAction> out;
    for (int a = 0; a <= static_cast<int>(cudapool::log::kLastLogAction); ++a) {
      out.push_back(static_cast<LogAction>(a));
    }
    return out;
  }();
  return actions;
}

LogRecord widest_record() {
  LogRecord r;
  r.seq = r.t_ns = r.tid = ~0ull;
  r.device = -2147483647 - 1;
  r.action = LogAction::kAlloc;
  r.frames = kMaxBacktrace;
  r.ctx = 255;
  r.ptr = r.size = r.block_size = r.segment = r.stream = r.latency_ns = ~0ull;
  r.error = -2147483647 - 1;
  for (auto& f : r.backtrace) f = ~0ull;
  static const std::string long_text(400, 'x');
  r.entry = long_text.c_str();
  r.caller = long_text.c_str();
  return r;
}

}  // namespace

TEST_CASE("log: action names are snake_case, distinct, and the pool's for pool actions") {
  std::set<std::string> seen;
  for (const LogAction a : all_actions()) {
    const std::string name = cudapool::log::action_name(a);
    INFO(name);
    CHECK(name != "unknown");
    for (const char c : name) CHECK(((c >= 'a' && c <= 'z') || c == '_'));
    CHECK(seen.insert(name).second);
  }
  CHECK(seen.size() == static_cast<std::size_t>(cudapool::log::kLastLogAction) + 1);
  for (int a = 0; a <= static_cast<int>(cudapool::pool::Action::kEmptyCache); ++a) {
    CHECK(std::string(cudapool::log::action_name(static_cast<LogAction>(a))) ==
          std::string(cudapool::pool::action_name(static_cast<cudapool::pool::Action>(a))));
  }
  CHECK(std::string(cudapool::log::action_name(LogAction::kContextDropped)) == "context_dropped");
  CHECK(std::string(cudapool::log::action_name(LogAction::kIpcRefused)) == "ipc_refused");
  CHECK(std::string(cudapool::log::action_name(LogAction::kStreamCreated)) == "stream_created");
  CHECK(std::string(cudapool::log::action_name(LogAction::kStreamFirstWork)) ==
        "stream_first_work");
}

TEST_CASE("log: stream events carry entry and caller, cut to length, never needing an escape") {
  LogRecord r;
  r.seq = 7;
  r.action = LogAction::kStreamFirstWork;
  r.stream = 0x5a5a;
  r.size = 3;
  r.entry = "cuLaunchKernel";
  r.caller = "libcudnn_engines_precompiled.so.9(_ZN5cudnn3fooEv+0x10)";
  CHECK(event_line(r) ==
        "{\"seq\":7,\"t_ns\":0,\"tid\":0,\"dev\":0,\"action\":\"stream_first_work\","
        "\"ptr\":\"0x0\",\"size\":3,\"stream\":\"0x5a5a\",\"entry\":\"cuLaunchKernel\","
        "\"caller\":\"libcudnn_engines_precompiled.so.9(_ZN5cudnn3fooEv+0x10)\"}\n");
  r.caller = "a \"quoted\" \\ name\n\xff";
  const json j = parse_line(event_line(r));
  CHECK(j.at("caller") == "a??quoted????name??");
  const std::string long_name(300, 'y');
  r.entry = long_name.c_str();
  r.caller = nullptr;
  const json k = parse_line(event_line(r));
  CHECK(k.at("entry").get<std::string>().size() == 64);
  CHECK(!k.contains("caller"));
}

TEST_CASE("log: event lines, exactly") {
  LogRecord r;
  r.seq = 2;
  r.t_ns = 5400;
  r.tid = 7;
  r.action = LogAction::kFreeRequested;
  r.ptr = 0x7f0000000000;
  r.size = 4096;
  CHECK(event_line(r) ==
        "{\"seq\":2,\"t_ns\":5400,\"tid\":7,\"dev\":0,\"action\":\"free_requested\","
        "\"ptr\":\"0x7f0000000000\",\"size\":4096}\n");

  r.seq = 1;
  r.device = 1;
  r.action = LogAction::kAlloc;
  r.cache_hit = true;
  r.block_size = 4608;
  r.segment = 0x7f0000000000;
  r.stream = 0xabc;
  r.latency_ns = 950;
  r.frames = 2;
  r.backtrace[0] = 0x401000;
  r.backtrace[1] = 0x7f12;
  CHECK(event_line(r) ==
        "{\"seq\":1,\"t_ns\":5400,\"tid\":7,\"dev\":1,\"action\":\"alloc\","
        "\"ptr\":\"0x7f0000000000\",\"size\":4096,\"block_size\":4608,"
        "\"segment\":\"0x7f0000000000\",\"stream\":\"0xabc\",\"cache_hit\":true,"
        "\"latency_ns\":950,\"backtrace\":[\"0x401000\",\"0x7f12\"]}\n");

  // A second context's pool on the device: "ctx" after "dev" (absent for context 0).
  LogRecord c;
  c.seq = 4;
  c.device = 1;
  c.ctx = 2;
  c.action = LogAction::kContextDropped;
  CHECK(event_line(c) ==
        "{\"seq\":4,\"t_ns\":0,\"tid\":0,\"dev\":1,\"ctx\":2,\"action\":\"context_dropped\","
        "\"ptr\":\"0x0\",\"size\":0}\n");

  LogRecord e;
  e.seq = 3;
  e.action = LogAction::kBadFree;
  e.error = 1;
  e.device = -1;
  CHECK(event_line(e) ==
        "{\"seq\":3,\"t_ns\":0,\"tid\":0,\"dev\":-1,\"action\":\"bad_free\",\"ptr\":\"0x0\","
        "\"size\":0,\"error\":1}\n");
}

TEST_CASE("log: every action's line parses, with the documented fields and types") {
  for (const LogAction a : all_actions()) {
    for (int variant = 0; variant < 2; ++variant) {
      LogRecord r;
      r.seq = 10;
      r.t_ns = 123456789;
      r.tid = 4242;
      r.device = 3;
      r.action = a;
      r.ptr = 0x7f00deadbeef;
      r.size = 1u << 20;
      if (variant == 1) {
        r.block_size = 2u << 20;
        r.segment = 0x7f00de000000;
        r.stream = 0x55;
        r.latency_ns = 77;
        r.error = 2;
        r.frames = 3;
        r.backtrace[0] = 1;
        r.backtrace[1] = 0xffffffffffffffff;
        r.backtrace[2] = 0x10;
      }
      const std::string line = event_line(r);
      INFO(line);
      const json j = parse_line(line);
      REQUIRE(j.is_object());
      CHECK(j.at("seq").is_number_unsigned());
      CHECK(j.at("t_ns").is_number_unsigned());
      CHECK(j.at("tid").is_number_unsigned());
      CHECK(j.at("dev").is_number_integer());
      CHECK(j.at("dev") == 3);
      CHECK(j.at("action") == cudapool::log::action_name(a));
      CHECK(j.at("ptr") == "0x7f00deadbeef");
      CHECK(j.at("size") == 1u << 20);
      CHECK(j.contains("cache_hit") == (a == LogAction::kAlloc));
      if (a == LogAction::kAlloc) CHECK(j.at("cache_hit").is_boolean());
      // An oom event never carries a backtrace: its figures share that storage (record.h).
      const bool oom = a == LogAction::kOom;
      const std::size_t optional = variant == 1 ? (oom ? 5 : 6) : 0;
      CHECK(j.size() == 7 + optional + (a == LogAction::kAlloc ? 1 : 0));
      if (variant == 1) {
        CHECK(j.at("block_size") == 2u << 20);
        CHECK(j.at("segment") == "0x7f00de000000");
        CHECK(j.at("stream") == "0x55");
        CHECK(j.at("latency_ns") == 77);
        CHECK(j.at("error") == 2);
        if (!oom) CHECK(j.at("backtrace") == json::array({"0x1", "0xffffffffffffffff", "0x10"}));
      }
    }
  }
}

TEST_CASE("log: an oom event carries what the out-of-memory means") {
  LogRecord r;
  r.seq = 5;
  r.action = LogAction::kOom;
  r.size = 1000;
  r.block_size = 1024;
  r.oom =
      cudapool::log::OomFigures{2u << 20, 80ull << 30, 1u << 20, 0,   79ull << 30, 70ull << 30,
                                12,       512u << 20,  1,        true};  // cause 1: fragmentation
  const json j = parse_line(event_line(r));
  CHECK(j.at("segment_size") == 2u << 20);
  CHECK(j.at("device_total") == 80ull << 30);
  CHECK(j.at("device_free") == 1u << 20);
  CHECK(!j.contains("cap"));
  CHECK(j.at("reserved") == 79ull << 30);
  CHECK(j.at("allocated") == 70ull << 30);
  CHECK(j.at("free_blocks") == 12);
  CHECK(j.at("largest_free_block") == 512u << 20);
  CHECK(j.at("cause") == "fragmentation");
  CHECK(!j.contains("backtrace"));
  r.oom.cap = 40ull << 30;
  r.oom.cause = 2;
  const json k = parse_line(event_line(r));
  CHECK(k.at("cap") == 40ull << 30);
  CHECK(k.at("cause") == "cap");
  // Without figures (cause 0) an oom line is the plain event.
  r.oom.cause = 0;
  CHECK(!parse_line(event_line(r)).contains("cause"));
}

TEST_CASE("log: the widest event fits kMaxEventLine, a small buffer gets 0") {
  LogRecord r = widest_record();
  r.frames = 200;  // more than backtrace[] holds: clamped
  const std::string line = event_line(r);
  CHECK(line.size() <= kMaxEventLine);
  CHECK(line.size() > 600);
  const json j = parse_line(line);
  CHECK(j.at("backtrace").size() == kMaxBacktrace);
  CHECK(j.at("seq") == ~0ull);
  CHECK(j.at("dev") == -2147483647 - 1);
  CHECK(j.at("ctx") == 255);
  CHECK(j.at("error") == -2147483647 - 1);
  CHECK(j.at("ptr") == "0xffffffffffffffff");

  std::vector<char> exact(line.size());
  CHECK(format_event(r, exact.data(), exact.size()) == line.size());
  CHECK(std::string(exact.data(), exact.size()) == line);
  char small[32];
  std::memset(small, 'x', sizeof small);
  CHECK(format_event(r, small, sizeof small) == 0);
  std::vector<char> short_by_one(line.size() - 1);
  CHECK(format_event(r, short_by_one.data(), short_by_one.size()) == 0);
  CHECK(format_event(r, nullptr, 0) == 0);

  LogRecord plain;  // a short line through a buffer smaller than kMaxEventLine
  const std::string plain_line = event_line(plain);
  std::vector<char> fit(plain_line.size());
  CHECK(format_event(plain, fit.data(), fit.size()) == plain_line.size());
  CHECK(std::string(fit.data(), fit.size()) == plain_line);
}

TEST_CASE("log: numbers at every digit count, decimal and hex") {
  std::vector<std::uint64_t> values = {0, ~0ull, ~0ull - 1};
  std::uint64_t pow10 = 1;
  for (int k = 0; k < 20; ++k, pow10 *= 10) {
    values.push_back(pow10 - 1);
    values.push_back(pow10);
    values.push_back(pow10 + 1);
  }
  for (int k = 0; k < 64; ++k) {
    values.push_back((1ull << k) - 1);
    values.push_back(1ull << k);
  }
  char hex[24];
  for (const std::uint64_t v : values) {
    LogRecord r;
    r.seq = v;
    r.size = v;
    r.ptr = v;
    r.device = static_cast<std::int32_t>(v);
    const json j = parse_line(event_line(r));
    INFO(v);
    CHECK(j.at("seq").get<std::uint64_t>() == v);
    CHECK(j.at("size").get<std::uint64_t>() == v);
    CHECK(j.at("dev").get<std::int64_t>() == static_cast<std::int32_t>(v));
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(v));
    CHECK(j.at("ptr") == hex);
  }
}

TEST_CASE("log: header line shape") {
  HeaderInfo h;
  h.version = "0.1.0";
  h.host = "node1";
  h.executable = "/usr/bin/python3";
  h.conf = "max_split_size_mb:128,expandable_segments:True";
  h.conf_source = "PYTORCH_CUDA_ALLOC_CONF";
  h.argv = {"python3", "train.py", "--lr=0.1 \"quoted\""};
  h.pid = 4242;
  h.start_unix_ns = 1700000000123456789ull;
  h.options = {{"max_split_size", "134217728"},
               {"expandable_segments", "true"},
               {"roundup_power2_divisions", cudapool::log::json_string("[256:1,>:4]")},
               {"garbage_collection_threshold", "0.5"},
               {"unset", ""}};
  h.devices = {DeviceInfo{0, "NVIDIA H200", 150754820096ull}, DeviceInfo{1, "GPU \"1\"", 1}};
  const std::string line = format_header(h);
  INFO(line);
  const json j = parse_line(line);
  CHECK(j.at("schema") == "cudapool.log/1");
  CHECK(j.at("version") == "0.1.0");
  CHECK(j.at("pid") == 4242);
  CHECK(j.at("host") == "node1");
  CHECK(j.at("executable") == "/usr/bin/python3");
  CHECK(j.at("argv") == json::array({"python3", "train.py", "--lr=0.1 \"quoted\""}));
  CHECK(j.at("start_time") == "2023-11-14T22:13:20.123456Z");
  CHECK(j.at("start_unix_ns") == 1700000000123456789ull);
  CHECK(!j.contains("start_t_ns"));  // 0: not written
  h.start_t_ns = 81270000000ull;
  CHECK(parse_line(format_header(h)).at("start_t_ns") == 81270000000ull);
  CHECK(j.at("conf") == h.conf);
  CHECK(j.at("conf_source") == "PYTORCH_CUDA_ALLOC_CONF");
  const json& o = j.at("options");
  CHECK(o.at("max_split_size") == 134217728);
  CHECK(o.at("expandable_segments") == true);
  CHECK(o.at("roundup_power2_divisions") == "[256:1,>:4]");
  CHECK(o.at("garbage_collection_threshold").is_number_float());
  CHECK(o.at("unset").is_null());
  REQUIRE(j.at("devices").size() == 2);
  CHECK(j.at("devices")[0] ==
        json({{"id", 0}, {"name", "NVIDIA H200"}, {"total_memory", 150754820096ull}}));
  CHECK(j.at("devices")[1].at("name") == "GPU \"1\"");
  CHECK(j.at("devices")[0].at("total_memory").is_number_unsigned());  // what replay reads

  const json empty = parse_line(format_header(HeaderInfo{}));
  CHECK(empty.at("argv") == json::array());
  CHECK(empty.at("options") == json::object());
  CHECK(empty.at("devices") == json::array());
  CHECK(empty.at("start_time") == "1970-01-01T00:00:00.000000Z");
}

TEST_CASE("log: summary line shape") {
  Summary s;
  s.seq = 101;
  s.t_ns = 999;
  s.events = 100;
  cudapool::pool::DeviceStats stats;
  stats.allocated_bytes[0].current = 4096;
  stats.allocated_bytes[0].peak = 8192;
  stats.max_split_size = -1;
  stats.num_ooms = 2;
  s.devices = {{0, stats}, {3, cudapool::pool::DeviceStats{}}};
  Leak hex;
  hex.dev = 0;
  hex.ptr = 0x7f0000001000;
  hex.size = 1000;
  hex.block_size = 1024;
  hex.seq = 17;
  hex.t_ns = 55;
  hex.tid = 8;
  hex.frames = {0x401000, 0x402000};
  Leak sym = hex;
  sym.symbols = {"train.py:12 forward", "libfoo.so(bar+0x1c) [0x7f01]"};
  Leak bare = hex;
  bare.frames.clear();
  s.leaks = {hex, sym, bare};
  s.write_failed = false;
  const std::string line = format_summary(s);
  INFO(line);
  const json j = parse_line(line);
  CHECK(j.at("schema") == "cudapool.log/1");
  CHECK(j.at("action") == "summary");
  CHECK(j.at("seq") == 101);
  CHECK(j.at("t_ns") == 999);
  CHECK(j.at("events") == 100);
  REQUIRE(j.at("devices").is_object());
  REQUIRE(j.at("devices").size() == 2);
  const json& st = j.at("devices").at("0").at("stats");
  std::vector<std::string> names;
  cudapool::pool::for_each_stat(stats, [&](std::string_view name, std::int64_t value) {
    names.emplace_back(name);
    CHECK(st.at(std::string(name)) == value);
  });
  CHECK(st.size() == names.size());
  CHECK(st.at("allocated_bytes.all.peak") == 8192);
  CHECK(st.at("max_split_size") == -1);
  CHECK(st.at("num_ooms") == 2);
  CHECK(j.at("devices").at("3").at("stats").size() == names.size());
  REQUIRE(j.at("leaks").size() == 3);
  CHECK(j.at("leaks")[0] == json({{"dev", 0},
                                  {"ptr", "0x7f0000001000"},
                                  {"size", 1000},
                                  {"block_size", 1024},
                                  {"seq", 17},
                                  {"t_ns", 55},
                                  {"tid", 8},
                                  {"backtrace", {"0x401000", "0x402000"}}}));
  CHECK(j.at("leaks")[1].at("backtrace") == json(sym.symbols));
  CHECK(!j.at("leaks")[2].contains("backtrace"));
  CHECK(j.at("log_errors") == json({{"write_failed", false}, {"records_lost", 0}}));
  CHECK(!j.contains("modules"));  // none: not written
  s.modules = {Module{0x400000, 0x401000, "/usr/bin/prog", 0, ""},
               Module{0x7f0000000000, 0x7f0000200000, "/lib/libx \"1\".so", 0, ""}};
  const json m = parse_line(format_summary(s));
  CHECK(m.at("modules") ==
        json::array({{{"base", "0x400000"}, {"end", "0x401000"}, {"path", "/usr/bin/prog"}},
                     {{"base", "0x7f0000000000"},
                      {"end", "0x7f0000200000"},
                      {"path", "/lib/libx \"1\".so"}}}));
  CHECK(m.at("log_errors") == j.at("log_errors"));

  Summary failed;
  failed.write_failed = true;
  failed.records_lost = 5;
  const json f = parse_line(format_summary(failed));
  CHECK(f.at("devices") == json::object());
  CHECK(f.at("leaks") == json::array());
  CHECK(f.at("log_errors") == json({{"write_failed", true}, {"records_lost", 5}}));
}

TEST_CASE("log: strings are escaped, invalid UTF-8 bytes as u00XX escapes") {
  using cudapool::log::json_string;
  CHECK(json_string("plain") == "\"plain\"");
  CHECK(json_string("a\"b\\c/d") == "\"a\\\"b\\\\c/d\"");
  CHECK(json_string("\b\f\n\r\t") == "\"\\b\\f\\n\\r\\t\"");
  CHECK(json_string(std::string("\x00\x01\x1f\x7f", 4)) == "\"\\u0000\\u0001\\u001f\x7f\"");
  // Valid UTF-8 passes through: 2, 3 and 4 byte sequences and the extremes.
  const std::string valid =
      "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf";
  CHECK(json_string(valid) == "\"" + valid + "\"");
  CHECK(json::parse(json_string(valid)).get<std::string>() == valid);
  // Invalid: lone continuation, bad lead bytes, overlong forms, surrogates, above U+10FFFF,
  // truncated sequences (also at the end).
  const std::vector<std::pair<std::string, std::string>> invalid = {
      {"\x80", "\\u0080"},
      {"\xff", "\\u00ff"},
      {"\xc0\xaf", "\\u00c0\\u00af"},
      {"\xc1\xbf", "\\u00c1\\u00bf"},
      {"\xe0\x80\xaf", "\\u00e0\\u0080\\u00af"},
      {"\xed\xa0\x80", "\\u00ed\\u00a0\\u0080"},
      {"\xf0\x80\x80\xaf", "\\u00f0\\u0080\\u0080\\u00af"},
      {"\xf4\x90\x80\x80", "\\u00f4\\u0090\\u0080\\u0080"},
      {"\xf5\x80\x80\x80", "\\u00f5\\u0080\\u0080\\u0080"},
      {"a\xc3", "a\\u00c3"},
      {"\xe2\x82z", "\\u00e2\\u0082z"},
      {"\xf0\x9f\x98", "\\u00f0\\u009f\\u0098"},
      {"\xc3\xa9\xa9", "\xc3\xa9\\u00a9"},
  };
  for (const auto& [in, out] : invalid) {
    INFO(out);
    const std::string quoted = json_string(in);
    CHECK(quoted == "\"" + out + "\"");
    CHECK_NOTHROW(json::parse(quoted));
  }
  // Every single byte and every byte pair comes out as valid JSON.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 7) {
      const std::string in{static_cast<char>(a), static_cast<char>(b)};
      const std::string quoted = json_string(in);
      INFO(a << " " << b);
      REQUIRE_NOTHROW(json::parse(quoted));
    }
  }
  // The same escaping in the header.
  HeaderInfo h;
  h.argv = {std::string("bad\xff\x01\"x", 7)};
  h.executable = "\xe2\x82";
  const json j = parse_line(format_header(h));
  CHECK(j.at("argv")[0] == "bad\xc3\xbf\x01\"x");  // \u00ff decodes to U+00FF
  CHECK(j.at("executable") == "\xc3\xa2\xc2\x82");
}

TEST_CASE("log: ISO-8601 UTC times") {
  using cudapool::log::iso8601_utc;
  CHECK(iso8601_utc(0) == "1970-01-01T00:00:00.000000Z");
  CHECK(iso8601_utc(1700000000123456789ull) == "2023-11-14T22:13:20.123456Z");
  CHECK(iso8601_utc(951782400000001000ull) == "2000-02-29T00:00:00.000001Z");
}
