// SPDX-License-Identifier: Apache-2.0
// log/logger_compressed.cpp: the writer thread of a compressed log (logger.h, compression.h). The
// lines formatted into the buffer go into the stream in chunks; a chunk ends at a sync point when
// the next line would pass its input limit (127 KiB for zstd, a frame each; in a regular file a
// page less 256 bytes for gzip), when its first line is kSyncNs old, at the log's end, or when
// wait_written_before_exit() asks (which closes the frame too). Whole chunks are written, as many
// as are ready, at file_offset_. Their layout in a regular file: a killed process's write stops
// between pages (the kernel copies a page at a time and checks for the kill before each), so the
// file may end at any page boundary inside a write; a chunk that a decoder could take a part of
// (gzip's always, zstd's unless it is one compressed block) and that would cross a page boundary
// goes to the next page, after padding that decodes to nothing. So the file, cut at any page
// boundary, decodes to whole lines. A failed write cuts the file back to where the write began (a
// sync point): what is on disk stays whole chunks. Not here: the codecs (compression.h), the plain
// lines, the descriptor and the loop (logger_writer.cpp).
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "log/logger.h"
#include "log/logger_detail.h"

namespace cudapool::log {

namespace {

// The most a line waits in a chunk not written (the loss at a SIGKILL, at least a chunk's worth of
// events): 0.1 s.
constexpr std::uint64_t kSyncNs = 100000000;

}  // namespace

void Logger::compress_lines(const char* data, std::size_t size, bool events) {
  std::size_t at = 0;
  while (at < size) {
    // The whole lines from `at` that fit in what the chunk has left, at least one line.
    const std::size_t left = chunk_limit_ > chunk_input_ ? chunk_limit_ - chunk_input_ : 0;
    std::size_t end = at;
    if (left > 0) {
      const void* nl = memrchr(data + at, '\n', std::min(left, size - at));
      if (nl != nullptr) end = static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1;
    }
    if (end == at && chunk_input_ > 0) {
      if (!end_chunk(/*close_frame=*/false)) break;
      continue;
    }
    if (end == at) {  // one line longer than a chunk takes (a summary line): a chunk of its own
      const void* nl = memchr(data + at, '\n', size - at);
      end =
          nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1 : size;
    }
    if (chunk_input_ == 0) chunk_started_ns_ = detail::clock_ns(CLOCK_MONOTONIC);
    if (!compressor_->add(std::string_view(data + at, end - at), chunk_)) {
      stream_failed();
      break;
    }
    chunk_input_ += end - at;
    if (events) chunk_lines_ += detail::count_event_lines(data + at, end - at);
    at = end;
    if (chunk_input_ >= chunk_limit_ && !end_chunk(/*close_frame=*/false)) break;
  }
  if (at < size && events) {  // after a failure: the lines never added are not in the file
    written_.store(
        written_.load(std::memory_order_relaxed) - detail::count_event_lines(data + at, size - at),
        std::memory_order_relaxed);
  }
}

bool Logger::end_chunk(bool close_frame) {
  const bool ok = close_frame ? compressor_->end(chunk_) : compressor_->sync(chunk_);
  if (!ok) {
    stream_failed();
    return false;
  }
  if (!chunk_.empty()) {
    if (page_ != 0 && !compressor_->all_or_nothing(chunk_)) {
      const std::size_t room = page_ - (file_offset_ + ready_.size()) % page_;
      if (chunk_.size() > room && room < page_) compressor_->padding(room, ready_);
    }
    ready_ += chunk_;
    chunk_.clear();
  }
  ready_lines_ += chunk_lines_;
  chunk_lines_ = 0;
  chunk_input_ = 0;
  return true;
}

bool Logger::write_ready(bool quiet) {
  if (ready_.empty()) return true;
  int err = 0;
  std::string why;
  if (!descriptor_is_ours(&err, &why)) {
    failed(why, quiet);
    lose_unwritten();
    return false;
  }
  const std::size_t done = write_at(ready_.data(), ready_.size(), file_offset_);
  if (done == ready_.size()) {
    file_offset_ += done;
    ready_.clear();
    ready_lines_ = 0;
    compressor_->commit();
    in_file_.store(written_.load(std::memory_order_relaxed) - chunk_lines_,
                   std::memory_order_release);
    return true;
  }
  err = errno;
  // A part of the chunks may be in the file: cut it back to the last sync point written.
  if (done > 0 && page_ != 0 && ftruncate(fd_, static_cast<off_t>(file_offset_)) != 0) {
  }
  failed(failure_text(err), quiet);
  lose_unwritten();
  return false;
}

void Logger::compressed_turn() {
  if (write_failed_.load(std::memory_order_relaxed)) return;
  const bool closing = close_frames_.load(std::memory_order_acquire);
  if (closing && compressor_->open()) {
    if (!end_chunk(/*close_frame=*/true)) return;
  } else if (chunk_lines_ > 0 && detail::clock_ns(CLOCK_MONOTONIC) - chunk_started_ns_ >= kSyncNs) {
    if (!end_chunk(/*close_frame=*/false)) return;
  }
  if (!write_ready(/*quiet=*/false)) return;
  if (closing)
    closed_at_.store(in_file_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void Logger::finish_compressed(const std::string* summary_line, bool quiet) {
  if (summary_line != nullptr) {
    compress_lines(summary_line->data(), summary_line->size(), /*events=*/false);
  }
  if (write_failed_.load(std::memory_order_relaxed) && !quiet) return;
  if (end_chunk(/*close_frame=*/true)) write_ready(quiet);
}

void Logger::stream_failed() {
  failed(std::string(compression_name(compression_)) + " compression failed", /*quiet=*/false);
  lose_unwritten();
}

void Logger::lose_unwritten() {
  written_.store(written_.load(std::memory_order_relaxed) - ready_lines_ - chunk_lines_,
                 std::memory_order_relaxed);
  ready_.clear();
  chunk_.clear();
  ready_lines_ = 0;
  chunk_lines_ = 0;
  chunk_input_ = 0;
  compressor_->lost();
}

void Logger::resume_after_exit_wait() {
  if (getpid() == process_) close_frames_.store(false, std::memory_order_release);
}

}  // namespace cudapool::log
