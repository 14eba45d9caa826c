// SPDX-License-Identifier: Apache-2.0
// bench/training_log/output.cpp: see output.h.
#include "bench/training_log/output.h"

#include <cerrno>
#include <cstring>

namespace cudapool::bench {

Output::~Output() {
  if (file_ != nullptr && file_ != stdout) std::fclose(file_);
}

bool Output::open(const std::string& path, std::string* error) {
  path_ = path == "-" ? "<stdout>" : path;
  file_ = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void Output::put(const char* data, std::size_t bytes) {
  if (errno_ != 0 || bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes) errno_ = errno != 0 ? errno : EIO;
  bytes_ += bytes;
}

void Output::flush() {
  put(buffer_.data(), used_);
  used_ = 0;
}

bool Output::close(std::string* error) {
  flush();
  if (std::fflush(file_) != 0 && errno_ == 0) errno_ = errno != 0 ? errno : EIO;
  if (file_ != stdout && std::fclose(file_) != 0 && errno_ == 0) errno_ = errno != 0 ? errno : EIO;
  file_ = nullptr;
  if (errno_ != 0) {
    *error = "cannot write " + path_ + ": " + std::strerror(errno_);
    return false;
  }
  return true;
}

}  // namespace cudapool::bench
