// SPDX-License-Identifier: Apache-2.0
// tools/analyze/input_tap.h: a stream buffer that passes a log's bytes through unchanged and
// notes what the engine needs of them besides the lines: how many bytes went by (progress), and
// the last line's length and first bytes with whether the input ends in a newline (how the log
// ends: ending.h), which the Python report found by reading the file backwards; here they come in
// the same single pass, so stdin and pipes need no copy. Wraps any std::istream (a plain file,
// stdin, a decompressing stream). Not here: splitting lines (log/read/line_reader.h).
#pragma once

#include <cstdint>
#include <istream>
#include <streambuf>
#include <string>

namespace cudapool::analyze {

inline constexpr std::size_t kLastLinePeek = 4096;  // ending.py PEEK

struct LastLine {
  bool empty = true;         // no bytes at all
  std::uint64_t length = 0;  // without its newline
  std::string head;          // its first kLastLinePeek bytes
  bool newline = false;      // the input ends with a newline
};

class InputTap : public std::streambuf {
 public:
  explicit InputTap(std::istream& source) : source_(source) {}

  std::uint64_t bytes() const { return bytes_; }
  bool at_end() const { return at_end_; }
  LastLine last_line() const;

 protected:
  std::streamsize xsgetn(char* s, std::streamsize n) override;
  int_type underflow() override;

 private:
  void observe(const char* s, std::size_t n);
  std::istream& source_;
  char one_[4096];
  std::uint64_t bytes_ = 0;
  bool at_end_ = false;
  // The line in progress (since the last newline) and the one the last newline ended.
  std::uint64_t current_length_ = 0, previous_length_ = 0;
  std::string current_head_, previous_head_;
};

}  // namespace cudapool::analyze
