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

void RequestScan::line(std::string_view text) {
  if (text.find('\\') != std::string_view::npos) {  // keys or values escaped: parse it
    const replay::ParsedLine parsed = replay::parse_log_line(text, nullptr);
    if (parsed.kind != replay::LineKind::kEvent) return;
    const replay::LogEvent& e = parsed.event;
    if (e.kind != replay::EventKind::kAlloc && e.kind != replay::EventKind::kOom) return;
    if (e.kind == replay::EventKind::kAlloc && e.size > bound) bound = e.size;
    if (sizes_known) sizes.insert(e.size);
  } else {
    const bool alloc = text.find("\"alloc\"") != std::string_view::npos;
    if (!alloc && text.find("\"oom\"") == std::string_view::npos) return;
    constexpr std::string_view kKey = "\"size\"";
    for (std::size_t at = text.find(kKey); at != std::string_view::npos;
         at = text.find(kKey, at + 1)) {
      std::size_t i = at + kKey.size();
      while (i < text.size() && json_space(text[i])) ++i;
      if (i >= text.size() || text[i] != ':') continue;
      ++i;
      while (i < text.size() && json_space(text[i])) ++i;
      const std::size_t digits = i;
      std::uint64_t value = 0;
      bool overflow = false;
      for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) overflow = true;
        value = value * 10 + digit;
      }
      if (overflow) value = std::numeric_limits<std::uint64_t>::max();
      if (alloc && value > bound) bound = value;
      if (!sizes_known) continue;
      // Only a plain integer is read the way the pass reads it; anything else, no sizes.
      const bool plain =
          i > digits && !overflow &&
          (i == text.size() || json_space(text[i]) || text[i] == ',' || text[i] == '}');
      if (plain) {
        sizes.insert(value);
      } else {
        forget_sizes();
      }
    }
  }
  if (sizes_known && sizes.size() > kMaxScannedSizes) forget_sizes();
}

std::uint64_t line_request_bound(std::string_view line) {
  RequestScan scan;
  scan.line(line);
  return scan.bound;
}

void scan_requests(std::istream& in, RequestScan* scan) {
  cudapool::log::for_each_line(
      in, [&](std::uint64_t, std::string_view line) { scan->line(line); },
      [](std::uint64_t) {});  // a line over the limit is malformed: no request
}

}  // namespace cudapool::tune
