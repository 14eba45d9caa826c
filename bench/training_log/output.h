// SPDX-License-Identifier: Apache-2.0
// bench/training_log/output.h: where the generated log goes: a file (created or truncated) or
// stdout ("-"), written in large blocks. A failed write (a full disk, a closed pipe) is kept and
// reported once by close(), with the path and the reason; later writes are dropped. Not here: what
// the lines say (process.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace cudapool::bench {

class Output {
 public:
  Output() = default;
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // false with *error set when path cannot be created.
  bool open(const std::string& path, std::string* error);
  void write(const char* data, std::size_t bytes) {
    if (used_ + bytes > buffer_.size()) flush();
    if (bytes > buffer_.size()) {
      put(data, bytes);
      return;
    }
    std::copy(data, data + bytes, buffer_.data() + used_);
    used_ += bytes;
  }
  void write(const std::string& text) { write(text.data(), text.size()); }
  // Room for a line of at most cap bytes, to be committed with wrote(n).
  char* reserve(std::size_t cap) {
    if (used_ + cap > buffer_.size()) flush();
    return buffer_.data() + used_;
  }
  void wrote(std::size_t bytes) { used_ += bytes; }
  // Writes what is buffered and closes; false with *error set when any write failed.
  bool close(std::string* error);
  std::size_t bytes() const { return bytes_ + used_; }

 private:
  void flush();
  void put(const char* data, std::size_t bytes);

  std::FILE* file_ = nullptr;
  std::string path_;
  std::vector<char> buffer_ = std::vector<char>(std::size_t{1} << 20);
  std::size_t used_ = 0, bytes_ = 0;
  int errno_ = 0;  // of the first failed write
};

}  // namespace cudapool::bench
