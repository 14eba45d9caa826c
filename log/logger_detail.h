// SPDX-License-Identifier: Apache-2.0
// log/logger_detail.h: what logger.cpp and logger_writer.cpp share, and nothing else includes:
// the clock of the log's t_ns, the log's one way to warn (the sink of set_warning_sink, else one
// line on stderr) and the count of event lines in written bytes. Not a public interface of log/.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace cudapool::log::detail {

std::uint64_t clock_ns(clockid_t clock);
void warn(const std::string& message);
// The event lines among the whole lines of [data, data + size): the lines that start with
// `{"seq"`. The writer's other lines (the definition lines of Python stacks, `{"action":...`, and
// the summary) are not events and never counted as written or lost records.
std::uint64_t count_event_lines(const char* data, std::size_t size);

}  // namespace cudapool::log::detail
