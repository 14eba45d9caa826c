// SPDX-License-Identifier: Apache-2.0
// tools/analyze/written_field.h: the fields an export shows of an event as its line wrote them
// (perfetto.py INSTANT_FIELDS), which the Event does not decode: their values as the Python
// reader makes them of the line (json.loads), taken from the line's raw fields (log_line.h
// RawFields) or, for an event handed over as its record (the in-process replay's: replayed.h),
// from the record as log/format_event.cpp writes it. So an export needs no line text. Not here:
// which of them an export shows (perfetto_trace.cpp), the decoded fields (log_line.h).
#pragma once

#include <optional>

#include "log/fields.h"
#include "tools/analyze/json_value.h"
#include "tools/analyze/log_line.h"

namespace cudapool::analyze {

// perfetto.py INSTANT_FIELDS, in its order.
inline constexpr log::EventField kShownFields[] = {
    log::EventField::kBlockSize,   log::EventField::kSegment,  log::EventField::kStream,
    log::EventField::kCtx,         log::EventField::kCause,    log::EventField::kDeviceFree,
    log::EventField::kDeviceTotal, log::EventField::kReserved, log::EventField::kAllocated,
    log::EventField::kSegmentSize, log::EventField::kEntry,    log::EventField::kCaller,
    log::EventField::kError};

// The value of field f (one of kShownFields) in e's line, or nullopt when the line has none. An
// event of a record: the fields of a pool event's record (block_size, segment, stream, ctx,
// error); replayed.h event_of_record() hands over no record whose line holds the others.
std::optional<JsonValue> written_field(const Event& e, log::EventField f);

}  // namespace cudapool::analyze
