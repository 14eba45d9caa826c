// SPDX-License-Identifier: Apache-2.0
// tools/replay/log_writer.cpp: see log_writer.h.
#include "tools/replay/log_writer.h"

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "log/record.h"

namespace cudapool::replay {

PoolLogWriter::~PoolLogWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

bool PoolLogWriter::open(const std::string& path, std::string* error) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  regular_ = fstat(fileno(file_), &st) == 0 && S_ISREG(st.st_mode);
  return true;
}

void PoolLogWriter::attach(std::FILE* file, const std::string& name) {
  file_ = file;
  path_ = name;
  regular_ = false;
}

void PoolLogWriter::attach(RecordSink* sink) {
  sink_ = sink;
  path_ = "the replay's log";
  regular_ = false;
}

void PoolLogWriter::start(const log::HeaderInfo& header) {
  if ((file_ == nullptr && sink_ == nullptr) || started_) return;
  started_ = true;
  const std::string line = log::format_header(header);
  write(line.data(), line.size());
}

void PoolLogWriter::write(const char* data, std::size_t bytes) {
  if (sink_ != nullptr) {
    sink_->line(std::string_view(data, bytes));
    return;
  }
  if (failed_) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes) {
    failed_ = true;
    errno_ = errno;
  }
}

std::uint64_t PoolLogWriter::on_pool_event(const pool::PoolEvent& event) {
  if ((file_ == nullptr && sink_ == nullptr) || failed_ || !started_) return 0;
  log::LogRecord r = log::record_of(event);
  r.seq = ++seq_;
  r.t_ns = t_ns_;
  r.tid = tid_;
  r.ctx = static_cast<std::uint8_t>(ctx_);
  if (sink_ != nullptr) {
    sink_->record(r);
    return r.seq;
  }
  char line[log::kMaxEventLine];
  const std::size_t n = log::format_event(r, line, sizeof line);
  if (n > 0) write(line, n);
  return r.seq;
}

bool PoolLogWriter::close(log::Summary summary, std::string* error) {
  if (file_ == nullptr && sink_ == nullptr) return false;
  if (summary.seq == 0) summary.seq = seq_ + 1;
  if (summary.t_ns == 0) summary.t_ns = t_ns_;
  if (summary.events == 0) summary.events = seq_;
  const std::string line = log::format_summary(summary);
  write(line.data(), line.size());
  if (sink_ != nullptr) {
    sink_ = nullptr;
    return true;
  }
  if (std::fflush(file_) != 0 && !failed_) {
    failed_ = true;
    errno_ = errno;
  }
  const bool closed = std::fclose(file_) == 0;
  if (!closed && !failed_) {
    failed_ = true;
    errno_ = errno;
  }
  file_ = nullptr;
  if (failed_) {
    *error = "cannot write " + path_ + ": " + std::strerror(errno_);
    if (regular_ && unlink(path_.c_str()) == 0) *error += " (the partial file was removed)";
    return false;
  }
  return true;
}

void PoolLogWriter::discard() {
  sink_ = nullptr;
  if (file_ == nullptr) return;
  std::fclose(file_);
  file_ = nullptr;
  if (regular_) unlink(path_.c_str());
}

}  // namespace cudapool::replay
