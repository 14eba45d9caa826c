// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_analyze_written_field.cpp: what an export shows of an event as its line wrote
// it (tools/analyze/written_field.h) is the same whether the event came as its record (the
// in-process replay's, replayed.h event_of_record) or as the line log/format_event.cpp writes of
// that record, read back by LineDecoder: every action a record can carry, with and without each
// field a pool event's record holds. And the decoded stream is the same both ways. Not here: the
// exports' output (tests/cli/perfetto_agree.sh and memviz_agree.sh on every log).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "log/format.h"
#include "tests/unit/catch.h"
#include "tools/analyze/json_out.h"
#include "tools/analyze/replayed.h"
#include "tools/analyze/written_field.h"

using namespace cudapool::analyze;
using cudapool::log::LogAction;

namespace {

// The fields shown, as one JSON text ("absent" for a field the line has none of).
std::string shown_text(const Event& e) {
  std::string text;
  for (const cudapool::log::EventField f : kShownFields) {
    text += std::string(cudapool::log::event_field_name(f)) + "=";
    const std::optional<JsonValue> v = written_field(e, f);
    if (v) {
      JsonOut out;
      out.value(*v);
      text += out.take();
    } else {
      text += "absent";
    }
    text += " ";
  }
  return text;
}

}  // namespace

TEST_CASE("analyze written_field: a record's fields are its line's") {
  using cudapool::log::LogRecord;
  int compared = 0;
  for (int a = 0; a <= static_cast<int>(cudapool::log::kLastLogAction); ++a) {
    for (int mask = 0; mask < 32; ++mask) {
      const auto with = [mask](int bit, std::uint64_t v) { return (mask & bit) != 0 ? v : 0; };
      LogRecord r;  // seq, t_ns and tid 0
      r.device = 1;
      r.action = static_cast<LogAction>(a);
      r.ptr = 0xabc000;
      r.size = 4096;
      r.block_size = with(1, 8192);
      r.segment = with(2, 0xFF0000);
      r.stream = with(4, 0x7f00deadbeef);
      r.ctx = static_cast<std::uint8_t>(with(8, 3));
      r.error = static_cast<std::int32_t>(with(16, 2)) * -1;
      Event from_record;
      if (!event_of_record(r, &from_record)) {
        CHECK(r.action == LogAction::kOom);  // the only action of a pool event left to its line
        continue;
      }
      char buffer[cudapool::log::kMaxEventLine];
      const std::size_t n = cudapool::log::format_event(r, buffer, sizeof buffer);
      REQUIRE(n > 1);
      const std::string_view line(buffer, n - 1);  // without its newline
      LineDecoder decoder;
      const Line& l = decoder.decode(line);
      REQUIRE(l.kind == LineKind::kEvent);
      INFO(line);
      CHECK(shown_text(from_record) == shown_text(l.event));
      CHECK(from_record.stream == l.event.stream);
      ++compared;
    }
  }
  CHECK(compared > 100);
}

TEST_CASE("analyze written_field: a line's fields as written, the last of a repeated key") {
  LineDecoder decoder;
  const Line& l = decoder.decode(
      R"({"seq":1,"t_ns":2,"tid":3,"dev":0,"action":"stream_created","ptr":"0x0","size":0,)"
      R"("stream":"0X00Ab","entry":"cuStreamCreate","caller":"lib\u0041","error":1.5,)"
      R"("error":7,"cause":true})");
  REQUIRE(l.kind == LineKind::kEvent);
  CHECK(l.event.stream == 0xab);
  CHECK(shown_text(l.event) ==
        "block_size=absent segment=absent stream=\"0X00Ab\" ctx=absent cause=true "
        "device_free=absent device_total=absent reserved=absent allocated=absent "
        "segment_size=absent entry=\"cuStreamCreate\" caller=\"libA\" error=7 ");
}
