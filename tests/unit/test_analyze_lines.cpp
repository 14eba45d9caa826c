// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_lines.cpp: the engine's reading of a line (tools/analyze/log_line.h,
// line_verdict.h): an event's fields decoded, and a malformed line named in the Python reader's
// words (tests/oracle/reader.py, Python's json module), with the position in
// characters, the newline after the line counted.
#include <string>

#include "tests/unit/catch.h"
#include "tools/analyze/line_verdict.h"
#include "tools/analyze/log_line.h"
#include "tools/analyze/python_stacks.h"

using namespace cudapool::analyze;

namespace {

std::string why(const std::string& line, bool newline = true) {
  return judge_line(line, newline).why;
}

std::string problem(const std::string& line) {
  static LineDecoder decoder;
  const Line& l = decoder.decode(line);
  return l.kind == LineKind::kMalformed ? l.problem : "";
}

const std::string kEvent =
    R"({"seq":1,"t_ns":2,"tid":3,"dev":0,"action":"alloc","ptr":"0x10","size":100)";

}  // namespace

TEST_CASE("analyze lines: JSON faults in Python's words, at Python's positions") {
  CHECK(why(R"({"a":1)") == "not JSON (Expecting ',' delimiter: line 2 column 1 (char 7))");
  CHECK(why(R"({"a":1)", false) == "not JSON (Expecting ',' delimiter: line 1 column 7 (char 6))");
  CHECK(why(R"({"a":NaN})") == "not JSON (NaN is not JSON)");
  CHECK(why(R"({"a":-Infinity})") == "not JSON (-Infinity is not JSON)");
  CHECK(why(R"({"a":00012})") == "not JSON (Expecting ',' delimiter: line 1 column 7 (char 6))");
  CHECK(why("{\"a\":\"x\ty\"}") ==
        "not JSON (Invalid control character at: line 1 column 8 (char 7))");
  CHECK(why(R"({"a":"\q"})") == "not JSON (Invalid \\escape: line 1 column 7 (char 6))");
  CHECK(why(R"({"a":"\u12G4"})") == "not JSON (Invalid \\uXXXX escape: line 1 column 8 (char 7))");
  // Characters, not bytes: the é is two bytes.
  CHECK(why(R"({"é":1,})") ==
        "not JSON (Expecting property name enclosed in double quotes: line 1 column 8 (char 7))");
  CHECK(why(R"({"a" 1})") == "not JSON (Expecting ':' delimiter: line 1 column 6 (char 5))");
  CHECK(why(R"({"a":1} x)") == "not JSON (Extra data: line 1 column 9 (char 8))");
  CHECK(why("") == "");
  CHECK(judge_line("  \t", true).verdict == Verdict::kBlank);
  CHECK(why("[1,2]") == "not a JSON object");
  CHECK(why(R"({"a":"\ud800"})") == "a string with a lone surrogate escape");
  CHECK(why("{\"a\":" + std::string(70, '[') + std::string(70, ']') + "}") ==
        "nested more than 64 levels deep");
  CHECK(why("{\"a\":" + std::string(2000, '[')) == "not JSON (nested too deeply)");
  CHECK(why("{\"a\":\"\xff\"}") == "not valid UTF-8 (byte 6)");
  CHECK(why("{\"a\":\"\xed\xa0\x80\"}") == "not valid UTF-8 (byte 6)");
  CHECK(why("{\"a\":\"\xc0\xaf\"}") == "not valid UTF-8 (byte 6)");
}

TEST_CASE("analyze lines: an event's fields and the reader's reasons for refusing one") {
  LineDecoder decoder;
  const Line& ok =
      decoder.decode(kEvent + R"(,"block_size":512,"segment":"0X1F","ctx":2,"cache_hit":true})");
  REQUIRE(ok.kind == LineKind::kEvent);
  CHECK(ok.event.seq == 1);
  CHECK(ok.event.ptr == 0x10);
  CHECK(ok.event.block_size == 512);
  CHECK(ok.event.has_segment);
  CHECK(ok.event.segment == 0x1f);
  CHECK(ok.event.ctx == 2);
  CHECK(ok.event.cache_hit);
  const Line& plain = decoder.decode(kEvent + "}");
  CHECK(plain.event.block_size == 100);  // size, when it has none
  CHECK(problem(R"({"t_ns":2,"tid":3,"dev":0,"action":"alloc","ptr":"0x1","size":1})") ==
        "malformed: event without 'seq'");
  CHECK(problem(kEvent + R"(,"size":1.0})") == "malformed: size is not an integer");
  CHECK(problem(kEvent + R"(,"size":-1})") == "malformed: size is negative (-1)");
  CHECK(problem(kEvent + R"(,"size":18446744073709551616})") ==
        "malformed: size is 18446744073709551616, not below 2**64");
  CHECK(problem(kEvent + R"(,"dev":65536})") ==
        "malformed: dev is 65536, not a device ordinal (0 to 65535)");
  CHECK(problem(kEvent + R"(,"ctx":256})") ==
        "malformed: ctx is 256, not a context number (0 to 255)");
  CHECK(problem(kEvent + R"(,"ptr":"0x10000000000000000"})") ==
        "malformed: ptr 0x10000000000000000 is not below 2**64");
  CHECK(problem(kEvent + R"(,"ptr":"0x1_0"})") == "malformed: ptr is not a hex string");
  CHECK(problem(kEvent + R"(,"segment":null})") == "malformed: segment is not a hex string");
  CHECK(problem(kEvent + R"(,"block_size":null})") == "malformed: block_size is not an integer");
  CHECK(problem(R"({"action":5})") == "malformed: action is not a string");
  CHECK(problem(R"({"x":1})") == "malformed: a JSON object without action");
  CHECK(problem(R"({"action":"summary","devices":[1]})") ==
        "malformed: summary devices is not an object");
  CHECK(decoder.decode(R"({"schema":"cudapool.log/1"})").kind == LineKind::kHeader);
  CHECK(decoder.decode(R"({"action":"summary","devices":null})").kind == LineKind::kSummary);
  // A line whose fault is at its very end: placed past the newline, or at the end without one.
  const Line& cut = decoder.decode(R"({"a":1)");
  CHECK(cut.problem == "malformed: not JSON (Expecting ',' delimiter: line 2 column 1 (char 7))");
  CHECK(cut.problem_if_last ==
        "malformed: not JSON (Expecting ',' delimiter: line 1 column 7 (char 6))");
}

TEST_CASE("analyze lines: the definition lines of Python stacks, and their table") {
  LineDecoder decoder;
  const Line& f =
      decoder.decode(R"({"action":"python_frame","id":7,"file":"a.py","line":3,"function":"g"})");
  REQUIRE(f.kind == LineKind::kDefinition);
  CHECK(f.definition.id == 7);
  CHECK(f.definition.file == "a.py");
  CHECK(f.definition.line == 3);
  CHECK(f.definition.function == "g");
  PythonStacks table;
  CHECK(table.define(f.definition).empty());
  const Line& s = decoder.decode(R"({"action":"python_stack","id":2,"frames":[7,8]})");
  REQUIRE(s.kind == LineKind::kDefinition);
  CHECK(table.define(s.definition).empty());
  CHECK(table.define(s.definition) == "a second python_stack 2: ignored");
  const PythonStack* stack = table.stack(2);
  REQUIRE(stack != nullptr);
  REQUIRE(stack->frames.size() == 2);
  CHECK(python_frame_text(*stack->frames[0]) == "a.py:3 g");
  CHECK(python_frame_text(*stack->frames[1]) == "?");  // frame 8: never defined
  CHECK(table.stack(3) == nullptr);
  CHECK(python_focus(*stack) == 0);
  const auto problem = [&](const char* text) { return decoder.decode(text).problem; };
  CHECK(problem(R"({"action":"python_frame","id":0,"file":"a","line":1,"function":"f"})") ==
        "malformed: python_frame id is not an unsigned integer from 1");
  CHECK(problem(R"({"action":"python_frame","id":1,"file":"a","line":-1,"function":"f"})") ==
        "malformed: python_frame line is not an unsigned integer");
  CHECK(problem(R"({"action":"python_stack","id":1,"frames":[1,[2]]})") ==
        "malformed: python_stack frames is not a list of unsigned integers from 1");
  // A definition line with an event's fields is not an event.
  CHECK(decoder
            .decode(R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"python_frame",)"
                    R"("ptr":"0x1","size":0})")
            .kind == LineKind::kMalformed);
  // The first user frame names a Python site.
  PythonFrame lib{"/usr/lib/python3.12/json/decoder.py", "f", 1, true};
  PythonFrame pkg{"/x/site-packages/torch/a.py", "g", 2, true};
  PythonFrame frozen{"<frozen runpy>", "h", 3, true};
  PythonFrame mine{"train.py", "main", 4, true};
  PythonStack mixed{0, {&lib, &pkg, &frozen, &mine}};
  CHECK(python_focus(mixed) == 3);
  CHECK(user_frame(PythonFrame{"/opt/lib/python3x/mine.py", "m", 1, true}));
  PythonFrame deep{"/home/someone/a/very/long/path/to/the/project/src/pkg/models/layers.py", "f", 7,
                   true};
  CHECK(python_frame_text(deep) == ".../pkg/models/layers.py:7 f");
}
