// SPDX-License-Identifier: Apache-2.0
// log/read/line_reader.h: reads a stream in 1 MiB chunks and hands out its lines without their
// newline (numbered from 1; a last line without a newline counts too), one at a time
// (LineReader::next, which a reader may stop calling and resume later: cudapool tune decodes a
// log in batches) or all of them to a function (for_each_line). A line longer than the limit
// (kMaxLineBytes, the newline not counted: docs/log-format.md, "Valid lines") is not held: it is
// reported as too long and the rest of it skipped, so the memory used is bounded whatever the
// input (an endless /dev/zero is an endless line). A UTF-8 byte order mark at the start of the
// first line is left out of it (it counts toward the limit), as the Python reader does
// (jsonline.lines_of). Header-only: every C++ reader of the log (the replay, the recorded log,
// tune) reads lines this way, from the stream a LogInput gives (input.h: plain, gzip or zstd).
// Not here: what a line means (tools/replay/log_event.h).
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

class LineReader {
 public:
  enum class Got { kLine, kTooLong, kEnd };

  explicit LineReader(std::istream& in, std::size_t max_line = kMaxLineBytes)
      : in_(in), max_line_(max_line) {}

  // The next line: kLine with *number and *line (valid until the next call), kTooLong with
  // *number (a line over the limit, skipped), or kEnd once the input has ended (and ever after).
  Got next(std::uint64_t* number, std::string_view* line) {
    if (deliver_carry_) {
      carry_.clear();
      deliver_carry_ = false;
    }
    for (;;) {
      if (pos_ == end_ && !refill()) {
        if (skipping_) {
          skipping_ = false;
          *number = ++line_number_;
          return Got::kTooLong;
        }
        if (carry_.empty()) return Got::kEnd;
        deliver_carry_ = true;
        return deliver(carry_, number, line);
      }
      const std::string_view chunk(buffer_.data() + pos_, end_ - pos_);
      const std::size_t nl = chunk.find('\n');
      const std::string_view piece =
          chunk.substr(0, nl == std::string_view::npos ? chunk.size() : nl);
      if (!skipping_ && carry_.size() + piece.size() > max_line_) {
        skipping_ = true;
        std::string().swap(carry_);  // its memory too
      }
      if (nl == std::string_view::npos) {
        if (!skipping_) carry_.append(piece);
        pos_ = end_;
        continue;
      }
      pos_ += nl + 1;
      if (skipping_) {
        skipping_ = false;
        *number = ++line_number_;
        return Got::kTooLong;
      }
      if (carry_.empty()) return deliver(piece, number, line);
      carry_.append(piece);
      deliver_carry_ = true;
      return deliver(carry_, number, line);
    }
  }

 private:
  bool refill() {
    if (ended_) return false;
    if (buffer_.empty()) buffer_.resize(std::size_t{1} << 20);
    std::size_t got = 0;
    if (in_) {
      in_.read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
      got = static_cast<std::size_t>(in_.gcount());
    }
    if (got == 0) {
      ended_ = true;
      std::string().swap(buffer_);  // a parked reader at its end holds nothing
      return false;
    }
    pos_ = 0;
    end_ = got;
    return true;
  }

  Got deliver(std::string_view text, std::uint64_t* number, std::string_view* line) {
    if (++line_number_ == 1 && text.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
      text.remove_prefix(kByteOrderMark.size());
    }
    *number = line_number_;
    *line = text;
    return Got::kLine;
  }

  std::istream& in_;
  std::size_t max_line_;
  std::string buffer_;
  std::size_t pos_ = 0, end_ = 0;  // the part of buffer_ not handed out yet
  std::string carry_;              // the start of a line that continues in the next chunk
  bool deliver_carry_ = false;     // carry_ was handed out: cleared at the next call
  bool skipping_ = false;          // inside a line over the limit: its bytes are dropped
  bool ended_ = false;
  std::uint64_t line_number_ = 0;
};

// Calls fn(line_number, line) for each line, too_long(line_number) for each line over max_line.
template <class Fn, class TooLong>
void for_each_line(std::istream& in, Fn&& fn, TooLong&& too_long,
                   std::size_t max_line = kMaxLineBytes) {
  LineReader reader(in, max_line);
  std::uint64_t number = 0;
  std::string_view line;
  for (;;) {
    switch (reader.next(&number, &line)) {
      case LineReader::Got::kLine:
        fn(number, line);
        break;
      case LineReader::Got::kTooLong:
        too_long(number);
        break;
      case LineReader::Got::kEnd:
        return;
    }
  }
}

}  // namespace cudapool::log
