// SPDX-License-Identifier: Apache-2.0
// tools/analyze/fast_line.cpp: see fast_line.h.
#include "tools/analyze/fast_line.h"

#include <cstdint>
#include <optional>

#include "log/fields.h"
#include "log/read/writer_line.h"
#include "log/record.h"

namespace cudapool::analyze {

namespace {

using replay::JsonKind;
using F = log::EventField;
using log::field_bit;

// The fields the fast path takes (a line with another, an oom event's figures, an error, a
// string besides the action, is the general path's).
constexpr std::uint32_t kTaken =
    field_bit(F::kSeq) | field_bit(F::kTNs) | field_bit(F::kTid) | field_bit(F::kDev) |
    field_bit(F::kCtx) | field_bit(F::kAction) | field_bit(F::kPtr) | field_bit(F::kSize) |
    field_bit(F::kBlockSize) | field_bit(F::kSegment) | field_bit(F::kStream) |
    field_bit(F::kCacheHit) | field_bit(F::kLatencyNs) | field_bit(F::kBacktrace) |
    field_bit(F::kPythonStack);

// The flat_json scanner's kind of a value of the field's kind.
JsonKind json_kind(F f) {
  switch (log::event_field(f).kind) {
    case log::FieldKind::kHex:
    case log::FieldKind::kString:
      return JsonKind::kString;
    case log::FieldKind::kBool:
      return JsonKind::kLiteral;
    case log::FieldKind::kHexList:
      return JsonKind::kNested;
    default:
      return JsonKind::kNumber;
  }
}

}  // namespace

bool fast_event_line(std::string_view text, RawFields& raw, std::string* action, Event& e) {
  log::WriterLine w;
  if (!log::scan_writer_line(text, kTaken, &w)) return false;
  // A definition line of Python stacks with an event's fields is not an event: the general path's.
  if (replay::definition_kind(w[F::kAction].text) != replay::DefinitionKind::kNone) return false;
  raw.clear();
  for (std::uint32_t left = w.present; left != 0; left &= left - 1) {
    const auto f = static_cast<F>(__builtin_ctz(left));
    std::optional<JsonField>* const slot = raw.slot(f);
    if (slot == nullptr) continue;
    *slot = JsonField{log::event_field_name(f), w[f].text, json_kind(f), false, false};
    if (f == F::kBlockSize) raw.figures[0] = *slot;
  }
  const auto optional = [&](F f) { return w.has(f) ? w[f].value : 0; };
  e = Event{};
  e.seq = w[F::kSeq].value;
  e.t_ns = w[F::kTNs].value;
  e.tid = w[F::kTid].value;
  e.ptr = w[F::kPtr].value;
  e.size = w[F::kSize].value;
  e.dev = static_cast<int>(w[F::kDev].value);
  e.ctx = static_cast<int>(optional(F::kCtx));
  e.block_size = w.has(F::kBlockSize) ? w[F::kBlockSize].value : e.size;
  e.has_segment = w.has(F::kSegment);
  e.segment = optional(F::kSegment);
  e.stream = optional(F::kStream);
  e.cache_hit = optional(F::kCacheHit) != 0;
  const std::string_view action_name = w[F::kAction].text;
  action->assign(action_name);
  log::LogAction a{};
  e.action = log::action_from_name(action_name, &a) ? static_cast<int>(a) : kUnknownAction;
  return true;
}

}  // namespace cudapool::analyze
