// SPDX-License-Identifier: Apache-2.0
// log/read/input_source.h: where LogInput's plain bytes come from (input.h): a descriptor read
// with read(2), decoded through a Decoder (decoder.h) when its first bytes named a compressed
// format, with the messages of a read error, corrupt data (its byte offset) and a stream cut in
// the middle of a frame. One thread at a time: the reader's (a plain input) or the decoding thread
// of read_ahead.h (a compressed one), which gives a descriptor to wake it by (set_stop_fd): every
// wait for the input (read(2) on a pipe, a FIFO, a terminal) is a poll(2) of both, so that a
// reader that stops early never waits on the input. Not here: the stream and progress line
// (input.cpp), opening the path and sniffing (LogInput::open).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "log/read/compression.h"
#include "log/read/decoder.h"

namespace cudapool::log {

class InputSource {
 public:
  // fd is closed at the end when own (never standard input); name is how messages name it.
  InputSource(int fd, bool own, std::string name);
  ~InputSource();
  InputSource(const InputSource&) = delete;
  InputSource& operator=(const InputSource&) = delete;

  // The first bytes (up to kSniffBytes, fewer at the end of the input), kept to be given again.
  // false on a read error (error()).
  bool read_first(std::string_view* first);
  // Decodes format from here on (nullptr: plain). Once, after read_first().
  void use(const CompressionFormat* format);
  // Polls stop_fd beside the input from here on: readable, the input counts as ended, no message.
  void set_stop_fd(int stop_fd) { stop_fd_ = stop_fd; }

  // Up to cap plain bytes into dst; 0 at the end of the input, at an error or once stopped (the
  // end for good). Corrupt data found after decoded bytes gives them first, then 0.
  std::size_t fill(char* dst, std::size_t cap);

  const CompressionFormat* format() const { return format_; }
  std::uint64_t bytes_read() const { return read_; }  // from the descriptor
  const std::string& error() const { return error_; }
  const std::string& ended_early() const { return ended_early_; }

 private:
  std::size_t read_plain(char* dst, std::size_t cap);
  std::size_t decode_into(char* dst, std::size_t cap);
  std::size_t read_some(char* dst, std::size_t cap);
  bool wait_readable();

  const int fd_;
  const bool own_;
  const std::string name_;
  int stop_fd_ = -1;
  const CompressionFormat* format_ = nullptr;
  std::unique_ptr<Decoder> decoder_;
  std::vector<char> in_;  // bytes read, not yet taken: [in_pos_, in_len_)
  std::size_t in_pos_ = 0, in_len_ = 0;
  std::string corrupt_;  // corrupt data found after bytes still to give: error_ after them
  bool input_end_ = false;
  bool done_ = false;
  bool stopped_ = false;  // stop_fd_ was readable: the end, not the input's
  std::uint64_t read_ = 0;
  std::string error_, ended_early_;
};

}  // namespace cudapool::log
