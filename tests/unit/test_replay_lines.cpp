// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_replay_lines.cpp: which lines the replay's parser (tools/replay/log_event.h)
// calls malformed: the rules fixture's verdicts (tests/cli/fixtures/line_rules.py, the same lines
// the report must agree on: tests/cli/replay_report_agree.sh), and the scanner's own strictness.
// Not here: what the replay does with valid lines (test_replay.cpp).
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tools/replay/flat_json.h"
#include "tools/replay/log_event.h"

using namespace cudapool::replay;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

LineKind kind_of(std::string_view line) {
  LogHeader header;
  return parse_log_line(line, &header).kind;
}

}  // namespace

TEST_CASE("replay lines: the rules fixture's malformed lines, and only those") {
  // line_rules.jsonl, and line_rules_python.jsonl: the definition lines of Python stacks.
  for (const std::string name : {"line_rules", "line_rules_python"}) {
    const std::string dir = std::string(CUDAPOOL_SOURCE_DIR) + "/tests/cli/fixtures/";
    const std::string text = read_file(dir + name + ".jsonl");
    REQUIRE_FALSE(text.empty());
    std::set<std::uint64_t> expected;
    std::istringstream want(read_file(dir + name + ".expected"));
    for (std::string l; std::getline(want, l);) {
      if (!l.empty() && l[0] != '#') expected.insert(std::stoull(l));
    }
    REQUIRE(expected.size() > 20);
    std::set<std::uint64_t> malformed;
    std::uint64_t number = 0;
    for (std::size_t start = 0; start < text.size();) {
      std::size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      ++number;
      const std::string_view line(text.data() + start, nl - start);
      if (kind_of(line) == LineKind::kMalformed) malformed.insert(number);
      start = nl + 1;
    }
    for (const std::uint64_t n : expected) {
      INFO(name << " line " << n << " should be malformed");
      CHECK(malformed.count(n) == 1);
    }
    for (const std::uint64_t n : malformed) {
      INFO(name << " line " << n << " should not be malformed");
      CHECK(expected.count(n) == 1);
    }
  }
}

TEST_CASE("replay lines: the header, the summary and events are told apart by action") {
  CHECK(kind_of(R"({"schema":"cudapool.log/1"})") == LineKind::kHeader);
  CHECK(kind_of(R"({"schema":"cudapool.log/2","action":null})") == LineKind::kHeader);
  CHECK(kind_of(R"({"schema":"cudapool.log\/1"})") == LineKind::kHeader);
  CHECK(kind_of(R"({"schema":"other/1"})") == LineKind::kMalformed);
  CHECK(kind_of(R"({"action":"summary","devices":{}})") == LineKind::kEvent);
  CHECK(kind_of(R"({"action":"summary","devices":[]})") == LineKind::kMalformed);
  // An event that names a schema is still an event: its fields are checked.
  CHECK(kind_of(R"({"schema":"cudapool.log/1","action":"alloc"})") == LineKind::kMalformed);
  CHECK(kind_of(R"(  )") == LineKind::kBlank);
  CHECK(kind_of("\f") == LineKind::kMalformed);
  // The definition lines of Python stacks: neither events nor headers.
  CHECK(kind_of(R"({"action":"python_frame","id":1,"file":"a.py","line":3,"function":"f"})") ==
        LineKind::kDefinition);
  CHECK(kind_of(R"({"action":"python_stack","id":1,"frames":[1]})") == LineKind::kDefinition);
  CHECK(kind_of(R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"python_stack","ptr":"0x1",)"
                R"("size":0})") == LineKind::kMalformed);
}

TEST_CASE("replay lines: escaped keys and values are read decoded") {
  LogHeader header;
  const ParsedLine p = parse_log_line(
      R"({"seq":1,"t_ns":2,"tid":3,"d\u0065v":1,"ctx":2,"action":"\u0061lloc","ptr":"0x\u0041B",)"
      R"("size":64,"stream":"0x\u0037"})",
      &header);
  REQUIRE(p.kind == LineKind::kEvent);
  CHECK(p.event.kind == EventKind::kAlloc);
  CHECK(p.event.device == 1);
  CHECK(p.event.ctx == 2);
  CHECK(p.event.ptr == 0xab);
  CHECK(p.event.stream == 7);
  CHECK(p.event.t_ns == 2);
  CHECK(p.event.tid == 3);
}

TEST_CASE("replay lines: the scanner takes strict JSON only") {
  auto ok = [](std::string_view line) { return scan_flat_object(line, [](const JsonField&) {}); };
  CHECK(ok(R"({"a":-0,"b":1.5e-3,"c":[{"d":[true,false,null]}],"e":"\u00e9\ud83d\ude00"})"));
  CHECK(ok("{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"));
  for (const char* bad : {R"({"a":01})",
                          R"({"a":1.})",
                          R"({"a":.1})",
                          R"({"a":+1})",
                          R"({"a":1e})",
                          R"({"a":--1})",
                          R"({"a":NaN})",
                          R"({"a":[1,]})",
                          R"({"a":[,1]})",
                          R"({"a":{"b"}})",
                          R"({"a":{"b":}})",
                          R"({"a":[tru]})",
                          R"({"a":"\q"})",
                          R"({"a":"\u00g0"})",
                          R"({"a":"\ud800x"})",
                          R"({"a":"\udc00"})",
                          "{\"a\":\"\x1f\"}",
                          "{\"a\":\"\xff\"}",
                          "{\"a\":\"\xc1\xbf\"}",
                          "{\"a\":\"\xed\xbf\xbf\"}",
                          "{\"a\":\"\xf5\x80\x80\x80\"}",
                          "{\"a\":\"\xe2\x82\"}"}) {
    INFO(bad);
    CHECK_FALSE(ok(bad));
  }
  // 64 levels deep, the line's object counted, and no more.
  const auto deep = [](int levels) {
    return "{\"a\":" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  CHECK(ok(deep(64)));
  CHECK_FALSE(ok(deep(65)));
  CHECK_FALSE(ok(deep(100000)));
}

TEST_CASE("replay lines: unsigned integers and hex strings as the format defines them") {
  auto uint = [](std::string_view text) {
    return parse_uint(JsonField{"k", text, JsonKind::kNumber});
  };
  auto hex = [](std::string_view text, bool escaped = false) {
    JsonField f{"k", text, JsonKind::kString};
    f.value_escaped = escaped;
    return parse_hex(f);
  };
  CHECK(uint("0").value() == 0);
  CHECK(uint("-0").value() == 0);
  CHECK(uint("18446744073709551615").value() == ~0ull);
  CHECK_FALSE(uint("18446744073709551616"));
  CHECK_FALSE(uint("-1"));
  CHECK_FALSE(uint("1.0"));
  CHECK_FALSE(uint("1e3"));
  CHECK_FALSE(parse_uint(JsonField{"k", "12", JsonKind::kString}));
  CHECK(hex("0x1f").value() == 31);
  CHECK(hex("0XAb").value() == 0xab);
  CHECK(hex("0x00000000000000000001").value() == 1);
  CHECK(hex("0xffffffffffffffff").value() == ~0ull);
  CHECK(hex(R"(0x\u0031)", true).value() == 1);
  for (const char* bad :
       {"0x", "0x1g", "0x1_0", "0x0x1", "0x1 ", " 0x1", "16", "0x10000000000000000"}) {
    INFO(bad);
    CHECK_FALSE(hex(bad));
  }
  CHECK_FALSE(parse_hex(JsonField{"k", "16", JsonKind::kNumber}));
}
