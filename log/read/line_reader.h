// log/read/line_reader.h: reads a stream in 1 MiB chunks and calls fn(line_number, line) for
// each line without its newline (numbered from 1; a last line without a newline counts too). A
// line longer than the limit (kMaxLineBytes, the newline not counted: docs/log-format.md, "Valid
// lines") is not held: too_long(line_number) is called instead and the rest of it skipped, so the
// memory used is bounded whatever the input (an endless /dev/zero is an endless line). A UTF-8
// byte order mark at the start of the first line is left out of it (it counts toward the limit),
// as the Python reader does (jsonline.lines_of). Header-only: every C++ reader of the log (the
// replay, the recorded log of cudapool tune) reads lines this way, from the stream a LogInput
// gives (input.h: plain, gzip or zstd). Not here: what a line means (tools/replay/log_event.h).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

namespace cudapool::log {

// The longest line a reader of the log takes: 64 MiB. The shim's event lines are at most 1 KiB
// (log/format.h); only a summary line listing hundreds of thousands of leaks comes near it.
inline constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;
// UTF-8's byte order mark, which some editors put at the start of a file.
inline constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

template <class Fn, class TooLong>
void for_each_line(std::istream& in, Fn&& fn, TooLong&& too_long,
                   std::size_t max_line = kMaxLineBytes) {
  std::string buffer(std::size_t{1} << 20, '\0');
  std::string carry;
  bool skipping = false;  // inside a line over the limit: its bytes are dropped
  std::uint64_t line_number = 0;
  auto deliver = [&](std::string_view line) {
    if (++line_number == 1 && line.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
      line.remove_prefix(kByteOrderMark.size());
    }
    fn(line_number, line);
  };
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::size_t got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    const std::string_view chunk(buffer.data(), got);
    std::size_t start = 0;
    while (start <= chunk.size()) {
      const std::size_t nl = chunk.find('\n', start);
      const std::size_t end = nl == std::string_view::npos ? chunk.size() : nl;
      const std::string_view piece = chunk.substr(start, end - start);
      if (!skipping && carry.size() + piece.size() > max_line) {
        skipping = true;
        std::string().swap(carry);  // its memory too
      }
      if (nl == std::string_view::npos) {
        if (!skipping) carry.append(piece);
        break;
      }
      if (skipping) {
        too_long(++line_number);
        skipping = false;
      } else if (carry.empty()) {
        deliver(piece);
      } else {
        carry.append(piece);
        deliver(std::string_view(carry));
        carry.clear();
      }
      start = nl + 1;
    }
  }
  if (skipping) {
    too_long(++line_number);
  } else if (!carry.empty()) {
    deliver(std::string_view(carry));
  }
}

}  // namespace cudapool::log
