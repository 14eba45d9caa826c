// SPDX-License-Identifier: Apache-2.0
// log/logger.cpp: see logger.h. The logger's life: start (the destination, the compression its
// name asks for, the header, the writer thread, started with every signal blocked), append from
// the hooks, finish (the summary line), stop, fork. Not here: what the writer thread does
// (logger_writer.cpp, logger_compressed.cpp), files (file.cpp), codecs (compression.h).
#include "log/logger.h"

#include <limits.h>
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
#include "log/logger_detail.h"

namespace cudapool::log {

using detail::clock_ns;
using detail::warn;

namespace {

constexpr std::size_t kBufferBytes = 64 * 1024;  // at least; 4 pages more where pages are big

thread_local std::uint64_t t_tid = 0;

std::uint64_t current_tid() {
  if (t_tid == 0) t_tid = static_cast<std::uint64_t>(syscall(SYS_gettid));
  return t_tid;
}

std::atomic<WarningSink> g_warning_sink{nullptr};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// The warnings of a start that opens no log, the same for Logger::start and check_log_template.
std::string template_warning(const std::string& path_template, const std::string& error) {
  return "log path " + json_string(path_template) + ": " + error + ": no log";
}
std::string no_log(const std::string& error) {
  return error + ": no log";
}

// The stream a log named `path` is written with: nullptr for a plain name, or when the library
// cannot be loaded (then *fallback is the start of the warning, "log PATH: zstd needs ...").
std::unique_ptr<Compressor> compressor_for(const std::string& path, std::string* fallback) {
  const Compression kind = compression_of(path);
  if (kind == Compression::kNone) return nullptr;
  std::string why;
  std::unique_ptr<Compressor> made = Compressor::create(kind, &why);
  if (made == nullptr) *fallback = "log " + path + ": " + why;
  return made;
}

// The header line, compressed when the log is: its first chunk, a sync point at its end.
bool first_content(const std::string& header, Compressor* compressor, std::string* out) {
  if (compressor == nullptr) {
    *out = header;
    return true;
  }
  out->clear();
  return compressor->add(header, *out) && compressor->sync(*out);
}

// The file's name as it will still be found after the program changed its directory (a daemon
// does chdir("/")).
std::string absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return {};
  return std::string(cwd) + "/" + path;
}

}  // namespace

namespace detail {

std::uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t count_event_lines(const char* data, std::size_t size) {
  std::uint64_t events = 0;
  for (std::size_t at = 0; at < size;) {
    const void* nl = std::memchr(data + at, '\n', size - at);
    const std::size_t end = nl != nullptr ? static_cast<const char*>(nl) - data + 1 : size;
    // `{"seq"`: an event's first key (format_event); a line that did not end counts as one.
    if (end - at > 2 && data[at + 2] == 's') ++events;
    at = end;
  }
  return events;
}

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

}  // namespace detail

void set_warning_sink(WarningSink sink) {
  g_warning_sink.store(sink, std::memory_order_release);
}

TemplateCheck check_log_template(const std::string& path_template, const EnvLookup& env,
                                 std::uint64_t pid, std::string host) {
  TemplateCheck out;
  if (host.empty()) host = host_name();
  const ExpandedPath expanded = expand_path_template(path_template, env, pid, host);
  if (!expanded.ok()) {
    out.warning = template_warning(path_template, expanded.error);
    return out;
  }
  out.path = expanded.path;
  const std::string error = check_log_file(expanded.path);
  if (!error.empty()) out.warning = no_log(error);
  return out;
}

std::vector<std::string> log_file_globs(const std::string& path_template, std::string* error) {
  const ExpandedPath glob = path_template_glob(path_template);
  if (!glob.ok()) {
    *error = template_warning(path_template, glob.error);
    return {};
  }
  error->clear();
  std::vector<std::string> names = {glob.path};
  // The pattern ends in the template's own last bytes: ".zst" there when the expanded name's is.
  if (compression_of(glob.path) != Compression::kNone) {
    names.push_back(without_compression_extension(glob.path));
  }
  static_assert(kMaxSuffix == 99, "the numbered names' patterns below: .1 to .99");
  std::vector<std::string> out;
  for (const std::string& name : names) {
    out.push_back(name);
    out.push_back(name + ".[1-9]");
    out.push_back(name + ".[1-9][0-9]");
  }
  return out;
}

Logger::Logger(int fd, std::string path, std::size_t ring_capacity, std::uint32_t stall_ms,
               std::unique_ptr<Compressor> compressor)
    : path_(std::move(path)),
      fd_(fd),
      stall_ms_(stall_ms),
      ring_(ring_capacity, stall_ms),
      compression_(compressor ? compressor->kind() : Compression::kNone),
      compressor_(std::move(compressor)) {
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
  if (compressor_) {
    chunk_limit_ = compressor_->max_chunk_input(page_);
    // Room for a write's worth of chunks with their padding (grown only by a summary line).
    ready_.reserve(2 * buffer_bytes_ + 2 * page_);
    chunk_.reserve(chunk_limit_ + 4096);
  }
}

Logger* Logger::start(const std::string& path_template, const HeaderInfo& header, EnvLookup env,
                      std::size_t ring_capacity, std::uint32_t stall_ms) {
  HeaderInfo h = header;
  if (h.pid == 0) h.pid = static_cast<std::uint64_t>(getpid());
  if (h.host.empty()) h.host = host_name();
  if (h.rank < 0) {  // the launcher's rank, when it is a number (a %r may hold any text)
    const RankVariable r = rank_variable(env);
    if (r.name != nullptr && !r.value.empty() && r.value.size() <= 10 &&
        r.value.find_first_not_of("0123456789") == std::string::npos) {
      const std::int64_t value = std::stoll(r.value);
      if (value < (std::int64_t{1} << 31)) {
        h.rank = value;
        h.rank_from = r.name;
      }
    }
  }
  if (h.start_unix_ns == 0) {  // the two clocks read back to back: the wall clock of any t_ns
    h.start_t_ns = clock_ns(CLOCK_MONOTONIC);
    h.start_unix_ns = clock_ns(CLOCK_REALTIME);
  }
  const ExpandedPath expanded = expand_path_template(path_template, env, h.pid, h.host);
  if (!expanded.ok()) {
    warn(template_warning(path_template, expanded.error));
    return nullptr;
  }
  // A name ending in .zst or .gz: the log compressed. Without the library, a file is written
  // plain under the name less the extension (never plain text under a .zst name), and a FIFO or
  // device (which keeps its name) gets no log.
  std::string path = expanded.path, fallback;
  std::unique_ptr<Compressor> compressor = compressor_for(path, &fallback);
  if (!fallback.empty()) {
    if (names_stream(path)) {
      warn(no_log(fallback));
      return nullptr;
    }
    path = without_compression_extension(path);
  }
  // The header goes in with the creation (file.h): a log file, once it exists, has its header.
  std::string first;
  if (!first_content(format_header(h), compressor.get(), &first)) {
    warn(no_log("log " + path + ": " + compression_name(compressor->kind()) +
                " compression failed"));
    return nullptr;
  }
  const CreatedFile file = create_log_file(path, first);
  if (file.fd < 0) {
    warn(no_log(file.error));
    return nullptr;
  }
  if (!file.note.empty()) warn(file.note);
  if (!fallback.empty()) warn(fallback + ": writing " + file.path + " uncompressed");
  if (compressor) compressor->commit();
  return launch(file.fd, file.path, nullptr, ring_capacity, stall_ms, file.created,
                /*named=*/true, std::move(compressor));
}

Logger* Logger::start_on_fd(int fd, const std::string& path, const HeaderInfo* header,
                            std::size_t ring_capacity, std::uint32_t stall_ms) {
  if (fd < 0) {
    warn("log " + path + ": no descriptor: no log");
    return nullptr;
  }
  std::string fallback;
  std::unique_ptr<Compressor> compressor = compressor_for(path, &fallback);
  if (!fallback.empty()) warn(fallback + ": writing it uncompressed");
  return launch(fd, path, header, ring_capacity, stall_ms, /*created=*/false, /*named=*/false,
                std::move(compressor));
}

Logger* Logger::launch(int fd, const std::string& path, const HeaderInfo* header,
                       std::size_t ring_capacity, std::uint32_t stall_ms, bool created, bool named,
                       std::unique_ptr<Compressor> compressor) {
  const auto give_up = [&](const std::string& why) -> Logger* {
    warn("log " + path + ": " + why + ": no log");
    close(fd);
    if (created) unlink(path.c_str());
    return nullptr;
  };
  // Out of the way of the numbers the program's own files get (descriptor.h).
  fd = keep_high(fd);
  Logger* logger = nullptr;
  try {
    logger = new Logger(fd, path, ring_capacity, stall_ms, std::move(compressor));
    if (named) logger->reopen_path_ = absolute(path);
  } catch (const std::bad_alloc&) {
    if (logger != nullptr) logger->fd_ = -1;  // give_up closes it
    delete logger;
    return give_up("out of memory for a ring of " + std::to_string(ring_capacity) + " records");
  }
  if (header != nullptr) {
    NoWriteSignals no_signals;  // a pipe whose reader left: a warning, not the program's death
    std::string line;
    if (!first_content(format_header(*header), logger->compressor_.get(), &line)) {
      const std::string why =
          std::string(compression_name(logger->compression_)) + " compression failed";
      logger->fd_ = -1;
      delete logger;
      return give_up(why);
    }
    if (logger->write_lines(line.data(), line.size(), /*quiet=*/true) != line.size()) {
      const int err = errno;
      logger->fd_ = -1;
      delete logger;
      return give_up("cannot write the header (" + failure_text(err) + ")");
    }
    if (logger->compressor_) logger->compressor_->commit();
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
  if (!finished_.exchange(true)) stop_writer();
  if (writer_ && writer_->joinable()) writer_->join();  // a stalled writer too: see logger.h
  close_if_ours();
}

std::uint64_t Logger::append(LogRecord r) {
  if (!accepting_.load(std::memory_order_relaxed)) return 0;
  if (r.t_ns == 0) r.t_ns = clock_ns(CLOCK_MONOTONIC);
  if (r.tid == 0) r.tid = current_tid();
  const std::uint64_t seq = ring_.push(r);
  if (seq == 0 && ring_.stalled() && !stall_reported_.load(std::memory_order_relaxed)) {
    report_stall();
  }
  return seq;
}

std::uint64_t Logger::on_pool_event(const pool::PoolEvent& event) {
  return append(record_of(event));
}

void Logger::report_stall() {
  const bool first_failure = !write_failed_.exchange(true);
  if (!stall_reported_.exchange(true) && first_failure) {
    warn("log " + path_ + ": reader stalled (" + stall_text(stall_ms_) +
         "): logging stopped; the program goes on");
  }
}

bool Logger::stop_writer() {
  accepting_.store(false, std::memory_order_release);
  stop_.store(true, std::memory_order_release);
  ring_.wake_consumer();
  if (!writer_) return true;
  // The writer ends once all is written: waited for while it makes progress.
  const std::uint64_t stall_ns = std::uint64_t{stall_ms_} * 1000000u;
  std::uint64_t seen = ring_.progress();
  std::uint64_t since = clock_ns(CLOCK_MONOTONIC);
  while (!writer_done_.load(std::memory_order_acquire) && !ring_.stalled()) {
    const timespec one_ms{0, 1000000};
    nanosleep(&one_ms, nullptr);
    ring_.wake_consumer();
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    const std::uint64_t progress = ring_.progress();
    if (progress != seen) {
      seen = progress;
      since = now;
    } else if (stall_ns != 0 && now - since >= stall_ns) {
      ring_.close_stalled();  // producers still waiting for a slot give up too
    }
  }
  if (!writer_done_.load(std::memory_order_acquire)) {
    report_stall();
    return false;  // left in its write, never joined (~Logger waits for it)
  }
  writer_->join();
  return true;
}

void Logger::finish(const Summary& summary) {
  if (forgotten_.load(std::memory_order_acquire)) return;
  if (finished_.exchange(true)) return;
  // The summary line is the writer's to write, after every queued record (stop_writer()).
  try {
    summary_ = std::make_unique<Summary>(summary);
    if (summary_->t_ns == 0) summary_->t_ns = clock_ns(CLOCK_MONOTONIC);
  } catch (const std::bad_alloc&) {
    summary_.reset();
  }
  if (stop_writer()) close_if_ours();
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
