// SPDX-License-Identifier: Apache-2.0
// log/logger_writer.cpp: the writer thread of logger.h. It sleeps on the ring's futex, formats
// into one buffer and writes whole lines with pwrite(2) (write(2) on anything but a regular file,
// PIPE_BUF bytes at a time so that a slow reader's progress shows), lines laid out so that no line
// straddles a page (see consume()); at its end the summary line. A failed write stops the log with
// one warning, never the program; a descriptor the program closed is opened again by the file's
// name. A compressed log's lines go through its stream instead (logger_compressed.cpp). Not here:
// starting and stopping it, and the stall limit (logger.cpp).
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log/logger.h"
#include "log/logger_detail.h"

namespace cudapool::log {

using detail::warn;

namespace {

constexpr std::size_t kDrainBatch = 256;
constexpr std::uint32_t kMinSleepUs = 1000;
constexpr std::uint32_t kMaxSleepUs = 16000;

}  // namespace

void Logger::run() {
  pthread_setname_np(pthread_self(), "cudapool-log");
  std::uint32_t sleep_us = kMinSleepUs;
  for (;;) {
    const bool stopping = stop_.load(std::memory_order_acquire);
    const std::size_t n = drain_some();
    if (n == kDrainBatch) {  // more is waiting; the buffer flushes itself when full
      if (compressor_ && close_frames_.load(std::memory_order_relaxed)) {
        flush_noexcept();
        turn_noexcept();
      }
      continue;
    }
    flush_noexcept();
    if (compressor_) turn_noexcept();
    if (n > 0) {
      sleep_us = kMinSleepUs;
      continue;
    }
    if (stopping) break;
    ring_.wait_for_records(sleep_us);
    sleep_us = sleep_us * 2 > kMaxSleepUs ? kMaxSleepUs : sleep_us * 2;
  }
  // Producers still waiting for a slot give up; what reached the ring meanwhile is written, then
  // the summary line (finish()).
  ring_.close();
  while (drain_some() > 0) {
  }
  flush_noexcept();
  if (summary_) {
    write_summary_line();
  } else if (compressor_ && !write_failed_.load()) {
    try {
      finish_compressed(nullptr, /*quiet=*/false);  // the frame closed: a complete file
    } catch (...) {
      write_failed_.store(true);
    }
  }
  writer_done_.store(true, std::memory_order_release);
}

void Logger::write_summary_line() {
  try {
    Summary& s = *summary_;
    const std::uint64_t events = ring_.appended() + ring_.refused();
    const std::uint64_t written = written_.load(std::memory_order_relaxed);
    if (s.events == 0) s.events = events;
    if (s.seq == 0) s.seq = events + 1;
    // After a write failure (or a stall) the summary is tried once more, quietly: if it lands, it
    // says that lines are missing.
    const bool failed_before = write_failed_.load();
    s.write_failed = s.write_failed || failed_before;
    if (events > written) s.records_lost += events - written;
    const std::string line = format_summary(s);
    if (compressor_) {
      finish_compressed(&line, /*quiet=*/failed_before);
      return;
    }
    if (page_ != 0 && line.size() <= page_ && file_offset_ > 0) {
      // Like an event line, the summary does not straddle a page when it fits in one.
      const std::size_t room = page_ - file_offset_ % page_;
      if (line.size() > room && room < page_ && !pad_last_line(room)) return;
    }
    write_lines(line.data(), line.size(), /*quiet=*/failed_before);
  } catch (...) {
    write_failed_.store(true);
  }
}

// The only allocations on the writer side are the strings of a warning and the definition lines
// of Python stacks: if one fails, logging stops (the ring must go on draining: an exception may not
// leave drain() half done).
std::size_t Logger::drain_some() {
  return ring_.drain(
      [this](const LogRecord& r) {
        try {
          consume(r);
        } catch (...) {
          write_failed_.store(true);
          buffered_ = 0;
        }
      },
      kDrainBatch);
}

void Logger::flush_noexcept() {
  try {
    flush();
  } catch (...) {
    write_failed_.store(true);
    buffered_ = 0;
  }
}

void Logger::turn_noexcept() {
  try {
    compressed_turn();
  } catch (...) {
    write_failed_.store(true);
  }
}

// Lines never straddle a page boundary of a regular file: when the next line would not fit in
// what is left of the page, the previous line is padded with spaces (valid JSON) up to the
// boundary. Why: when the process is killed during a write, the kernel stops copying between
// page-cache chunks, which begin and end on page boundaries; with a newline before every boundary,
// what reached the file ends with a whole line.
void Logger::consume(const LogRecord& record) {
  if (write_failed_.load(std::memory_order_relaxed)) return;  // discarded, counted at the end
  if (record.python_stack != 0) define_python_stack(record.python_stack);
  if (write_failed_.load(std::memory_order_relaxed)) return;
  const std::size_t line_page = compressor_ ? 0 : page_;
  if (buffer_bytes_ - buffered_ < line_page + kMaxEventLine) flush();
  if (write_failed_.load(std::memory_order_relaxed)) return;
  char* at = buffer_.get() + buffered_;
  const std::size_t n = format_event(record, at, buffer_bytes_ - buffered_);
  if (!lay_out(at, n)) return;
  written_.store(written_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The line of n bytes just formatted at the buffer's end: when it would straddle a page boundary
// (and fits in a page), the line before it is padded to the boundary. A compressed log lays out
// its chunks, not its lines (logger_compressed.cpp).
bool Logger::lay_out(char* at, std::size_t n) {
  const std::size_t line_page = compressor_ ? 0 : page_;
  if (line_page != 0) {
    const std::size_t room = page_ - (file_offset_ + buffered_) % page_;
    if (n > room && n <= page_) {
      if (buffered_ > 0) {
        std::memmove(at + room, at, n);
        buffer_[buffered_ - 1] = ' ';
        std::memset(at, ' ', room - 1);
        at[room - 1] = '\n';
        buffered_ += room;
      } else if (!pad_last_line(room)) {
        return false;
      }
    }
  }
  buffered_ += n;
  return true;
}

// Before the first event that names Python stack `id`: the python_frame lines of its frames not
// written yet, then its python_stack line (docs/log-format.md, "Python stacks"). Not events: not
// counted in written_.
void Logger::define_python_stack(std::uint32_t id) {
  if (id < stacks_defined_.size() && stacks_defined_[id]) return;
  const std::vector<std::uint32_t> frames = python_stacks_.stack(id);
  if (frames.empty()) return;  // not in the table: the event is written without its definition
  const auto put = [this](const std::string& line) {
    const std::size_t line_page = compressor_ ? 0 : page_;
    if (buffer_bytes_ - buffered_ < line_page + line.size()) flush();
    if (write_failed_.load(std::memory_order_relaxed)) return false;
    if (buffer_bytes_ - buffered_ < line_page + line.size()) return true;  // wider than the buffer
    char* at = buffer_.get() + buffered_;
    std::memcpy(at, line.data(), line.size());
    return lay_out(at, line.size());
  };
  for (const std::uint32_t f : frames) {
    if (f < frames_defined_.size() && frames_defined_[f]) continue;
    PythonFrame frame;
    if (!python_stacks_.frame(f, &frame)) continue;
    if (!put(format_python_frame(f, frame))) return;
    if (f >= frames_defined_.size()) frames_defined_.resize(f + 1 + f / 2, false);
    frames_defined_[f] = true;
  }
  if (!put(format_python_stack(id, frames))) return;
  if (id >= stacks_defined_.size()) stacks_defined_.resize(id + 1 + id / 2, false);
  stacks_defined_[id] = true;
}

bool Logger::pad_last_line(std::size_t room) {
  int err = 0;
  std::string why;
  if (!descriptor_is_ours(&err, &why)) {
    failed(why, /*quiet=*/false);
    return false;
  }
  // [file_offset_ - 1, file_offset_ + room) lies inside one page: written in one piece.
  std::memset(pad_.get(), ' ', room);
  pad_[room] = '\n';
  const std::uint64_t at = file_offset_ - 1;
  if (write_at(pad_.get(), room + 1, at) == room + 1) {
    file_offset_ += room;
    return true;
  }
  err = errno;
  // Put the newline back and drop what went beyond it.
  write_at("\n", 1, at);
  if (ftruncate(fd_, static_cast<off_t>(file_offset_)) != 0) {
  }
  failed(failure_text(err), /*quiet=*/false);
  return false;
}

void Logger::flush() {
  if (buffered_ == 0) return;
  const std::size_t lines_end = buffered_;
  buffered_ = 0;
  if (compressor_ && !write_failed_.load(std::memory_order_relaxed)) {
    compress_lines(buffer_.get(), lines_end, /*events=*/true);
    if (!write_failed_.load(std::memory_order_relaxed)) write_ready(/*quiet=*/false);
    return;
  }
  // After a failure or a stall (declared while these lines were formatted) nothing more is
  // written.
  const std::size_t done = write_failed_.load(std::memory_order_relaxed)
                               ? 0
                               : write_lines(buffer_.get(), lines_end, /*quiet=*/false);
  if (done != lines_end) {
    // The lines of this buffer not written are counted back out.
    const std::uint64_t lines = detail::count_event_lines(buffer_.get() + done, lines_end - done);
    written_.store(written_.load(std::memory_order_relaxed) - lines, std::memory_order_relaxed);
    return;
  }
  // Every record consumed so far has its line in the file (records are consumed in seq order).
  in_file_.store(written_.load(std::memory_order_relaxed), std::memory_order_release);
}

bool Logger::wait_written_before_exit(std::uint32_t stall_ms) {
  if (forgotten_.load(std::memory_order_acquire) || finished_.load(std::memory_order_acquire) ||
      getpid() != process_) {
    return false;
  }
  const std::uint64_t target = ring_.appended();
  // A compressed log: the records in a closed frame (closed_at_ is 1 + the records in the file
  // when the writer last closed one).
  const bool compressed = compressor_ != nullptr;
  if (compressed) close_frames_.store(true, std::memory_order_release);
  const auto done = [&] {
    return compressed ? closed_at_.load(std::memory_order_acquire) > target
                      : in_file_.load(std::memory_order_acquire) >= target;
  };
  std::uint64_t seen = ring_.progress();
  std::uint32_t still_ms = 0;
  while (!done()) {
    if (write_failed_.load(std::memory_order_relaxed)) return false;
    ring_.wake_consumer();
    const timespec one_ms{0, 1000000};
    nanosleep(&one_ms, nullptr);
    const std::uint64_t now = ring_.progress();
    if (now != seen) {
      seen = now;
      still_ms = 0;
    } else if (++still_ms >= stall_ms) {
      return false;
    }
  }
  return true;
}

std::size_t Logger::write_at(const char* data, std::size_t size, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < size) {
    // A pipe or device a piece at a time: a slow reader's progress is the stall limit's.
    const std::size_t piece = page_ == 0 && size - done > PIPE_BUF ? PIPE_BUF : size - done;
    const ssize_t n = page_ != 0
                          ? pwrite(fd_, data + done, piece, static_cast<off_t>(offset + done))
                          : write(fd_, data + done, piece);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      ring_.note_progress();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = ENOSPC;  // no progress: no room
    break;
  }
  return done;
}

std::size_t Logger::write_lines(const char* data, std::size_t size, bool quiet) {
  {
    int err = 0;
    std::string why;
    if (!descriptor_is_ours(&err, &why)) {
      failed(why, quiet);
      errno = err;
      return 0;
    }
  }
  const std::size_t done = write_at(data, size, file_offset_);
  if (done == size) {
    file_offset_ += size;
    return size;
  }
  const int err = errno;
  std::size_t whole = done;
  if (done > 0) {
    // A part of a line may be in the file: cut the file back to the last whole line written.
    while (whole > 0 && data[whole - 1] != '\n') --whole;
    const auto good = static_cast<off_t>(file_offset_ + whole);
    if (ftruncate(fd_, good) == 0 && page_ == 0) lseek(fd_, good, SEEK_SET);
    file_offset_ += whole;
  }
  failed(failure_text(err), quiet);
  errno = err;
  return whole;
}

bool Logger::descriptor_is_ours(int* err, std::string* why) {
  struct stat st;
  const bool open = fstat(fd_, &st) == 0;
  const int fstat_err = open ? 0 : errno;
  if (open && (!identity_known_ || (st.st_dev == dev_ && st.st_ino == ino_))) return true;
  // The program closed the descriptor (a daemon closing all of its own: EBADF) or gave its number
  // to a file of its own (never written, never closed here): the log's file by its name, when it
  // still is the same file, written on from where the log is.
  *why = open ? "descriptor " + std::to_string(fd_) + " now refers to another file"
              : failure_text(fstat_err);
  if (identity_known_ && !reopen_path_.empty()) {
    const int fd = reopen_same_file(reopen_path_, dev_, ino_);
    if (fd >= 0) {
      fd_ = fd;
      return true;
    }
    *why += ", and " + reopen_path_ + " cannot be opened again (" +
            (errno == EXDEV ? std::string("another file has that name now") : failure_text(errno)) +
            ")";
  }
  *err = open ? EBADF : fstat_err;
  return false;
}

void Logger::failed(const std::string& why, bool quiet) {
  const bool first_failure = !write_failed_.exchange(true);
  if (first_failure && !quiet) {
    warn("log " + path_ + ": write failed (" + why + "): logging stopped; the program goes on");
  }
}

}  // namespace cudapool::log
