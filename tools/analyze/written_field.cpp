// SPDX-License-Identifier: Apache-2.0
// tools/analyze/written_field.cpp: see written_field.h.
#include "tools/analyze/written_field.h"

#include <cinttypes>
#include <cstdio>
#include <string>

namespace cudapool::analyze {

namespace {

using F = log::EventField;

// A field's value as a JSON reader makes it (a string decoded; a number with its text).
std::optional<JsonValue> value_of(const JsonField& f) {
  if (f.kind != replay::JsonKind::kString) return parse_json(f.value);
  return JsonValue::string_of(f.value_escaped ? replay::decode_json_string(f.value)
                                              : std::string(f.value));
}

// format_event's hex string: "0x" and lower-case digits without leading zeros.
JsonValue hex(std::uint64_t x) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, x);
  return JsonValue::string_of(text);
}

// What format_event writes of f for r (each when not 0).
std::optional<JsonValue> record_field(const log::LogRecord& r, F f) {
  switch (f) {
    case F::kBlockSize:
      if (r.block_size != 0) return JsonValue::number_of(std::to_string(r.block_size));
      break;
    case F::kSegment:
      if (r.segment != 0) return hex(r.segment);
      break;
    case F::kStream:
      if (r.stream != 0) return hex(r.stream);
      break;
    case F::kCtx:
      if (r.ctx != 0) return JsonValue::number_of(std::to_string(r.ctx));
      break;
    case F::kError:
      if (r.error != 0) return JsonValue::number_of(std::to_string(r.error));
      break;
    default:
      break;
  }
  return std::nullopt;
}

}  // namespace

std::optional<JsonValue> written_field(const Event& e, log::EventField f) {
  if (e.record != nullptr) return record_field(*e.record, f);
  if (e.raw == nullptr) return std::nullopt;
  const std::optional<JsonField>* field = e.raw->slot(f);
  if (field == nullptr || !*field) return std::nullopt;
  return value_of(**field);
}

}  // namespace cudapool::analyze
