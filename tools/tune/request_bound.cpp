// tools/tune/request_bound.cpp: see request_bound.h.
#include "tools/tune/request_bound.h"

#include <limits>

#include "log/read/line_reader.h"
#include "tools/replay/log_event.h"

namespace cudapool::tune {

namespace {

bool json_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

}  // namespace

std::uint64_t line_request_bound(std::string_view line) {
  if (line.find('\\') != std::string_view::npos) {  // keys or values escaped: parse it
    const replay::ParsedLine parsed = replay::parse_log_line(line, nullptr);
    return parsed.kind == replay::LineKind::kEvent && parsed.event.kind == replay::EventKind::kAlloc
               ? parsed.event.size
               : 0;
  }
  if (line.find("\"alloc\"") == std::string_view::npos) return 0;
  constexpr std::string_view kKey = "\"size\"";
  std::uint64_t bound = 0;
  for (std::size_t at = line.find(kKey); at != std::string_view::npos;
       at = line.find(kKey, at + 1)) {
    std::size_t i = at + kKey.size();
    while (i < line.size() && json_space(line[i])) ++i;
    if (i >= line.size() || line[i] != ':') continue;
    ++i;
    while (i < line.size() && json_space(line[i])) ++i;
    std::uint64_t value = 0;
    bool overflow = false;
    for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
      const std::uint64_t digit = static_cast<std::uint64_t>(line[i] - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) overflow = true;
      value = value * 10 + digit;
    }
    if (overflow) return std::numeric_limits<std::uint64_t>::max();
    if (value > bound) bound = value;
  }
  return bound;
}

std::uint64_t largest_request_bound(std::istream& in) {
  std::uint64_t bound = 0;
  cudapool::log::for_each_line(
      in,
      [&](std::uint64_t, std::string_view line) {
        const std::uint64_t b = line_request_bound(line);
        if (b > bound) bound = b;
      },
      [](std::uint64_t) {});  // a line over the limit is malformed: no request
  return bound;
}

}  // namespace cudapool::tune
