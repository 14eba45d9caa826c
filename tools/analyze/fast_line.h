// SPDX-License-Identifier: Apache-2.0
// tools/analyze/fast_line.h: the engine's fast path for the event lines the log's writers write
// (log/format_event.cpp, bench/make_training_log): a line log/read/writer_line.h's scanner takes
// (the writers' compact form, each key once, values in the writers' forms, dev and ctx in range),
// of the keys seq, t_ns, tid, dev, ctx, action, ptr, size, block_size, segment, stream, cache_hit,
// latency_ns, backtrace and python_stack only, is read in one pass into exactly the RawFields and
// Event the general path (the flat_json scanner, then log_line.cpp's checks) gives it. Any other
// line, valid or not, is left to the general path (the answer is false), which alone says what is
// wrong with a line. Not here: the scanning (writer_line.h), the meaning of the fields
// (log_line.h).
#pragma once

#include <string>
#include <string_view>

#include "tools/analyze/log_line.h"

namespace cudapool::analyze {

// text: the line without its newline. On true, raw holds the line's fields (raw cleared first),
// *action the action's name and e the event (e.raw and e.action_name are the caller's to set);
// on false, raw, action and e hold anything.
bool fast_event_line(std::string_view text, RawFields& raw, std::string* action, Event& e);

}  // namespace cudapool::analyze
