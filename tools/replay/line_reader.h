// tools/replay/line_reader.h: reads a stream in 1 MiB chunks and calls fn(line_number, line) for
// each line without its newline (numbered from 1; a last line without a newline counts too).
// Header-only: the replay and the recorded log both read logs this way.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

namespace cudapool::replay {

template <class Fn>
void for_each_line(std::istream& in, Fn&& fn) {
  std::string buffer(1 << 20, '\0');
  std::string carry;
  std::uint64_t line_number = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::size_t got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    std::string_view chunk(buffer.data(), got);
    std::size_t start = 0;
    while (true) {
      const std::size_t nl = chunk.find('\n', start);
      if (nl == std::string_view::npos) {
        carry.append(chunk.substr(start));
        break;
      }
      if (carry.empty()) {
        fn(++line_number, chunk.substr(start, nl - start));
      } else {
        carry.append(chunk.substr(start, nl - start));
        fn(++line_number, std::string_view(carry));
        carry.clear();
      }
      start = nl + 1;
    }
  }
  if (!carry.empty()) fn(++line_number, std::string_view(carry));
}

}  // namespace cudapool::replay
