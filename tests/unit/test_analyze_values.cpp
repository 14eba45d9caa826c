// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_values.cpp: the engine's values (tools/analyze/json_value.h,
// json_out.h, figure.h, downsample.h, layout.h): the format's kinds, Python's repr() of what a
// problem quotes, exact figures past 64 bits in the JSON it writes, the timeline's downsampling
// keeping every peak, and the layout's ranges and largest free block.
#include <algorithm>
#include <random>
#include <string>

#include "tests/unit/catch.h"
#include "tools/analyze/downsample.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/json_value.h"
#include "tools/analyze/layout.h"

using namespace cudapool::analyze;

namespace {
JsonValue parsed(const std::string& text) {
  auto v = parse_json(text);
  REQUIRE(v.has_value());
  return *v;
}
}  // namespace

TEST_CASE("analyze values: kinds, Python's repr, exact figures in the JSON written") {
  CHECK(fits(parsed("18446744073709551615"), Kind::kUint));
  CHECK(!fits(parsed("18446744073709551616"), Kind::kUint));
  CHECK(!fits(parsed("1.0"), Kind::kUint));
  CHECK(!fits(parsed("true"), Kind::kUint));
  CHECK(fits(parsed("-9223372036854775808"), Kind::kInt));
  CHECK(!fits(parsed("9223372036854775808"), Kind::kInt));
  CHECK(fits(parsed(R"("0X00ffffffffffffffff")"), Kind::kHex));
  CHECK(!fits(parsed(R"("0x10000000000000000")"), Kind::kHex));
  CHECK(fits(parsed(R"(["a","b"])"), Kind::kStringList));
  CHECK(!fits(parsed(R"(["a",1])"), Kind::kStringList));
  CHECK(py_repr(parsed(R"("other.log/1")")) == "'other.log/1'");
  CHECK(py_repr(parsed(R"("it's")")) == "\"it's\"");
  CHECK(py_repr(parsed(R"([1, 1.5, 1e16, 0.0001, 1e-05, null, true, {"k":"\n"}])")) ==
        "[1, 1.5, 1e+16, 0.0001, 1e-05, None, True, {'k': '\\n'}]");
  CHECK(py_repr(parsed("-0")) == "0");
  CHECK(parsed(std::string(4400, '9')).integer_text() == "18446744073709551616");
  // The object keeps a key where first seen, with the value last given.
  const JsonValue o = parsed(R"({"a":1,"b":2,"a":3})");
  REQUIRE(o.members.size() == 2);
  CHECK(o.members[0].first == "a");
  CHECK(o.members[0].second.text == "3");
  CHECK(first_chars("h\xc3\xa9llo", 2) == "h\xc3\xa9");
  JsonOut out;
  out.begin_object().key("big").num(kUint64Limit * 4 - 1).key("neg").num(Figure{-5});
  out.key("r").real(2.0).key("s").str("a\"\x01").end_object();
  CHECK(out.text() == R"({"big":73786976294838206463,"neg":-5,"r":2.0,"s":"a\"\u0001"})");
}

TEST_CASE("analyze values: the downsampled timeline keeps every peak and trough, first reached") {
  std::mt19937_64 rng(3);
  Downsampler ds(2 * kValues * 64 + 2);  // 64 buckets: the series is cut hard
  Values hi{}, lo{};
  std::uint64_t hi_t[kValues] = {}, lo_t[kValues] = {};
  std::uint64_t t = 0;
  for (int i = 0; i < 100000; ++i) {
    t += rng() % 5000;
    Values v;
    for (std::size_t j = 0; j < kValues; ++j) {
      v[j] = static_cast<Figure>(rng() % 1000000) - 500000 + (j == 3 ? kUint64Limit : 0);
      if (i == 0 || v[j] > hi[j]) hi[j] = v[j], hi_t[j] = t;
      if (i == 0 || v[j] < lo[j]) lo[j] = v[j], lo_t[j] = t;
    }
    ds.add(t, v);
  }
  const std::vector<Sample> points = ds.points();
  CHECK(points.size() <= 2 * kValues * 64 + 2);
  CHECK(points.front().n == 0);
  CHECK(points.back().n == 99999);
  for (std::size_t j = 0; j < kValues; ++j) {
    const auto top = std::max_element(points.begin(), points.end(), [&](const Sample& a, const Sample& b) {
      return a.values[j] < b.values[j];
    });
    const auto bottom = std::min_element(points.begin(), points.end(), [&](const Sample& a, const Sample& b) {
      return a.values[j] < b.values[j];
    });
    CHECK(top->values[j] == hi[j]);
    CHECK(top->t == hi_t[j]);
    CHECK(bottom->values[j] == lo[j]);
    CHECK(bottom->t == lo_t[j]);
  }
}

TEST_CASE("analyze values: mapped ranges join and split as layout.py's, and the largest gap") {
  Layout l;
  LayoutOp op;
  op.type = LayoutOp::kAddRange;
  op.key = MapKey{true, 0x1000};
  op.at = 0x1000;
  op.end = 0x3000;
  l.apply(op);
  op.at = 0x3000;  // touching: joined
  op.end = 0x5000;
  l.apply(op);
  REQUIRE(l.regions().size() == 1);
  op.type = LayoutOp::kRemoveRange;  // an unmap of no bytes splits the range in two
  op.at = op.end = 0x2000;
  l.apply(op);
  CHECK(l.regions().size() == 2);
  LayoutOp seg;
  seg.type = LayoutOp::kSetSegment;
  seg.at = 0x10000;
  seg.end = 0x1000;
  l.apply(seg);
  LayoutOp block;
  block.type = LayoutOp::kSetBlock;
  block.at = 0x1000;
  block.block.block_size = 0x800;
  l.apply(block);
  block.at = 0x4000;
  block.block.block_size = 0x100;
  l.apply(block);
  const Gap g = l.largest_gap(false);
  CHECK(g.regions == 3);
  // Gaps: [0x1800, 0x2000), [0x2000, 0x4000) (the largest, in the second region), [0x4100,
  // 0x5000), the whole segment [0x10000, 0x11000).
  CHECK(g.found);
  CHECK(g.bytes == 0x2000);
  CHECK(g.at == 0x2000);
  CHECK(g.seg == 0x1000);
}
