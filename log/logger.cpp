// log/logger.cpp: see logger.h. The writer thread blocks every signal and sleeps on the ring's
// futex; it formats into one buffer and writes whole lines with pwrite(2) (write(2) on anything
// but a regular file), lines laid out so that no line straddles a page (see consume()).
#include "log/logger.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "log/file.h"

namespace cudapool::log {

namespace {

constexpr std::size_t kBufferBytes = 64 * 1024;  // at least; 4 pages more where pages are big
constexpr std::size_t kDrainBatch = 256;
constexpr std::uint32_t kMinSleepUs = 1000;
constexpr std::uint32_t kMaxSleepUs = 16000;

thread_local std::uint64_t t_tid = 0;

std::uint64_t current_tid() {
  if (t_tid == 0) t_tid = static_cast<std::uint64_t>(syscall(SYS_gettid));
  return t_tid;
}

std::uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string error_text(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);
}

std::atomic<WarningSink> g_warning_sink{nullptr};

// Through the sink, else one line on stderr in one write(2).
void warn(const std::string& message) {
  if (const WarningSink sink = g_warning_sink.load(std::memory_order_acquire)) {
    sink(message);
    return;
  }
  const std::string line = "cudapool: " + message + "\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

void set_warning_sink(WarningSink sink) {
  g_warning_sink.store(sink, std::memory_order_release);
}

Logger::Logger(int fd, std::string path, std::size_t ring_capacity)
    : path_(std::move(path)), fd_(fd), ring_(ring_capacity) {
  struct stat st;
  const bool known = fstat(fd, &st) == 0;
  if (known) {
    identity_known_ = true;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  if (known && S_ISREG(st.st_mode)) {
    const long page = sysconf(_SC_PAGESIZE);
    page_ = page > 0 ? static_cast<std::size_t>(page) : 4096;
    const off_t at = lseek(fd, 0, SEEK_CUR);
    file_offset_ = at > 0 ? static_cast<std::uint64_t>(at) : 0;
    pad_.reset(new char[page_ + 1]);
  }
  buffer_bytes_ = std::max(kBufferBytes, 4 * page_ + kMaxEventLine);
  buffer_.reset(new char[buffer_bytes_]);
}

Logger* Logger::start(const std::string& path_template, const HeaderInfo& header, EnvLookup env,
                      std::size_t ring_capacity) {
  HeaderInfo h = header;
  if (h.pid == 0) h.pid = static_cast<std::uint64_t>(getpid());
  if (h.host.empty()) h.host = host_name();
  if (h.start_unix_ns == 0) {  // the two clocks read back to back: the wall clock of any t_ns
    h.start_t_ns = clock_ns(CLOCK_MONOTONIC);
    h.start_unix_ns = clock_ns(CLOCK_REALTIME);
  }
  const ExpandedPath expanded = expand_path_template(path_template, env, h.pid, h.host);
  if (!expanded.ok()) {
    warn("log path " + json_string(path_template) + ": " + expanded.error + ": no log");
    return nullptr;
  }
  // The header goes in with the creation (file.h): a log file, once it exists, has its header.
  const CreatedFile file = create_log_file(expanded.path, format_header(h));
  if (file.fd < 0) {
    warn(file.error + ": no log");
    return nullptr;
  }
  if (!file.note.empty()) warn(file.note);
  return launch(file.fd, file.path, nullptr, ring_capacity, file.created);
}

Logger* Logger::start_on_fd(int fd, const std::string& path, const HeaderInfo* header,
                            std::size_t ring_capacity) {
  if (fd < 0) {
    warn("log " + path + ": no descriptor: no log");
    return nullptr;
  }
  return launch(fd, path, header, ring_capacity, /*created=*/false);
}

Logger* Logger::launch(int fd, const std::string& path, const HeaderInfo* header,
                       std::size_t ring_capacity, bool created) {
  const auto give_up = [&](const std::string& why) -> Logger* {
    warn("log " + path + ": " + why + ": no log");
    close(fd);
    if (created) unlink(path.c_str());
    return nullptr;
  };
  Logger* logger = nullptr;
  try {
    logger = new Logger(fd, path, ring_capacity);
  } catch (const std::bad_alloc&) {
    return give_up("out of memory for a ring of " + std::to_string(ring_capacity) + " records");
  }
  if (header != nullptr) {
    NoSigpipe no_sigpipe;  // a pipe whose reader left: a warning, not the program's death
    const std::string line = format_header(*header);
    if (logger->write_lines(line.data(), line.size(), /*quiet=*/true) != line.size()) {
      const int err = errno;
      logger->fd_ = -1;
      delete logger;
      return give_up("cannot write the header (" + error_text(err) + ")");
    }
  }
  // The writer thread takes no signal meant for the program.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    logger->writer_ = std::make_unique<std::thread>([logger] { logger->run(); });
  } catch (const std::exception& e) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    logger->fd_ = -1;
    delete logger;
    return give_up(std::string("cannot start the writer thread (") + e.what() + ")");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return logger;
}

Logger::~Logger() {
  if (forgotten_.load(std::memory_order_acquire)) return;
  if (!finished_.exchange(true)) {
    NoSigpipe no_sigpipe;
    stop_writer();
  }
  close_if_ours();
}

std::uint64_t Logger::append(LogRecord r) {
  if (!accepting_.load(std::memory_order_relaxed)) return 0;
  if (r.t_ns == 0) r.t_ns = clock_ns(CLOCK_MONOTONIC);
  if (r.tid == 0) r.tid = current_tid();
  return ring_.push(r);
}

void Logger::on_pool_event(const pool::PoolEvent& event) {
  append(record_of(event));
}

void Logger::run() {
  pthread_setname_np(pthread_self(), "cudapool-log");
  std::uint32_t sleep_us = kMinSleepUs;
  for (;;) {
    const bool stopping = stop_.load(std::memory_order_acquire);
    const std::size_t n = drain_some();
    if (n == kDrainBatch) continue;  // more is waiting; the buffer flushes itself when full
    flush_noexcept();
    if (n > 0) {
      sleep_us = kMinSleepUs;
      continue;
    }
    if (stopping) return;
    ring_.wait_for_records(sleep_us);
    sleep_us = sleep_us * 2 > kMaxSleepUs ? kMaxSleepUs : sleep_us * 2;
  }
}

// The only allocations on the writer side are the strings of a warning: if one fails, logging
// stops (the ring must go on draining: an exception may not leave drain() half done).
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

// Lines never straddle a page boundary of a regular file: when the next line would not fit in
// what is left of the page, the previous line is padded with spaces (valid JSON) up to the
// boundary. Why: when the process is killed during a write, the kernel stops copying between
// page-cache chunks, which begin and end on page boundaries; with a newline before every boundary,
// what reached the file ends with a whole line.
void Logger::consume(const LogRecord& record) {
  if (write_failed_.load(std::memory_order_relaxed)) return;  // discarded, counted at the end
  if (buffer_bytes_ - buffered_ < page_ + kMaxEventLine) flush();
  if (write_failed_.load(std::memory_order_relaxed)) return;
  char* at = buffer_.get() + buffered_;
  const std::size_t n = format_event(record, at, buffer_bytes_ - buffered_);
  if (page_ != 0) {
    const std::size_t room = page_ - (file_offset_ + buffered_) % page_;
    if (n > room) {
      if (buffered_ > 0) {
        std::memmove(at + room, at, n);
        buffer_[buffered_ - 1] = ' ';
        std::memset(at, ' ', room - 1);
        at[room - 1] = '\n';
        buffered_ += room;
      } else if (!pad_last_line(room)) {
        return;
      }
    }
  }
  buffered_ += n;
  written_.store(written_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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
  failed(error_text(err), /*quiet=*/false);
  return false;
}

void Logger::flush() {
  if (buffered_ == 0) return;
  const std::size_t lines_end = buffered_;
  buffered_ = 0;
  const std::size_t done = write_lines(buffer_.get(), lines_end, /*quiet=*/false);
  if (done != lines_end) {
    // The lines of this buffer not written are counted back out.
    std::uint64_t lines = 0;
    for (std::size_t i = done; i < lines_end; ++i) lines += buffer_[i] == '\n';
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
  std::uint64_t seen = in_file_.load(std::memory_order_acquire);
  std::uint32_t still_ms = 0;
  while (seen < target) {
    if (write_failed_.load(std::memory_order_relaxed)) return false;
    ring_.wake_consumer();
    const timespec one_ms{0, 1000000};
    nanosleep(&one_ms, nullptr);
    const std::uint64_t now = in_file_.load(std::memory_order_acquire);
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
    const ssize_t n = page_ != 0
                          ? pwrite(fd_, data + done, size - done, static_cast<off_t>(offset + done))
                          : write(fd_, data + done, size - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
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
  failed(error_text(err), quiet);
  errno = err;
  return whole;
}

bool Logger::descriptor_is_ours(int* err, std::string* why) const {
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    *err = errno;
    *why = error_text(*err);
    return false;
  }
  if (identity_known_ && (st.st_dev != dev_ || st.st_ino != ino_)) {
    *err = EBADF;
    *why = "descriptor " + std::to_string(fd_) + " now refers to another file";
    return false;
  }
  return true;
}

void Logger::failed(const std::string& why, bool quiet) {
  const bool first_failure = !write_failed_.exchange(true);
  if (first_failure && !quiet) {
    warn("log " + path_ + ": write failed (" + why + "): logging stopped; the program goes on");
  }
}

void Logger::stop_writer() {
  accepting_.store(false, std::memory_order_release);
  stop_.store(true, std::memory_order_release);
  ring_.wake_consumer();
  if (writer_ && writer_->joinable()) writer_->join();
  // Producers still waiting for a slot give up; what reached the ring meanwhile is written here.
  ring_.close();
  while (drain_some() > 0) {
  }
  flush_noexcept();
}

void Logger::finish(const Summary& summary) {
  if (forgotten_.load(std::memory_order_acquire)) return;
  if (finished_.exchange(true)) return;
  // The last lines are written on this thread (at exit: the program's): to a FIFO or pipe whose
  // reader left, they fail with EPIPE instead of killing the process.
  NoSigpipe no_sigpipe;
  stop_writer();
  Summary s = summary;
  const std::uint64_t events = ring_.appended();
  const std::uint64_t written = written_.load(std::memory_order_relaxed);
  if (s.events == 0) s.events = events;
  if (s.seq == 0) s.seq = events + 1;
  if (s.t_ns == 0) s.t_ns = clock_ns(CLOCK_MONOTONIC);
  s.write_failed = s.write_failed || write_failed_.load();
  if (events > written) s.records_lost += events - written;
  // After a write failure the summary is tried once more, quietly: if it lands, it says that
  // lines are missing.
  const std::string line = format_summary(s);
  if (page_ != 0 && line.size() <= page_ && file_offset_ > 0) {
    // Like an event line, the summary does not straddle a page when it fits in one.
    const std::size_t room = page_ - file_offset_ % page_;
    if (line.size() > room && room < page_ && !pad_last_line(room)) return close_if_ours();
  }
  write_lines(line.data(), line.size(), /*quiet=*/write_failed_.load());
  close_if_ours();
}

// Never closes a descriptor the program reused. No allocation (called in a child after fork).
void Logger::close_if_ours() {
  struct stat st;
  if (fd_ >= 0 && fstat(fd_, &st) == 0 &&
      (!identity_known_ || (st.st_dev == dev_ && st.st_ino == ino_))) {
    close(fd_);
  }
  fd_ = -1;
}

void Logger::forget_after_fork() {
  if (forgotten_.exchange(true)) return;
  accepting_.store(false, std::memory_order_relaxed);
  t_tid = 0;  // this thread's id in the parent
  // The writer thread does not exist in this process: drop its handle without joining
  // (std::thread's destructor would terminate).
  (void)writer_.release();
  close_if_ours();
}

Logger::Counters Logger::counters() const {
  return Counters{ring_.appended(), written_.load(std::memory_order_relaxed),
                  ring_.producer_waits(), write_failed_.load(std::memory_order_relaxed)};
}

}  // namespace cudapool::log
