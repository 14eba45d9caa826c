// log/logger_detail.h: what logger.cpp and logger_writer.cpp share, and nothing else includes:
// the clock of the log's t_ns and the log's one way to warn (the sink of
// set_warning_sink, else one line on stderr). Not a public interface of log/.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>

namespace cudapool::log::detail {

std::uint64_t clock_ns(clockid_t clock);
void warn(const std::string& message);

}  // namespace cudapool::log::detail
