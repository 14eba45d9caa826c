// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_destination.cpp: where a log or summary may go besides a new file
// (log/file.h): an existing character device (/dev/null, /dev/full), a FIFO, a symbolic link to
// one (/dev/stderr), never numbered and never created in /dev; and a created file that exists only
// with its first line (the header is written before the name appears). Needs no root: /dev/null,
// /dev/full and FIFOs in a temporary directory. Not here: the path template and plain files
// (test_log_path.cpp), the logger's lines (test_log_logger.cpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "log/file.h"
#include "log/logger.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::create_log_file;
using cudapool::log::CreatedFile;
using cudapool::log::FileKind;
using cudapool::log::Logger;
using cudapool::log::LogRecord;
using cudapool::log::Summary;

namespace {

using logtest::env_of;
using logtest::exists;
using logtest::read_file;
using logtest::sample_header;
using logtest::StderrCapture;
using logtest::TempDir;

bool is_char_device(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// Names in /dev that the code under test must never create. One that already exists (from an
// earlier run of a broken build) is reported and left alone; one that appears during the test was
// made by the code under test: it is removed again (a regular file only) and reported.
class DevWatch {
 public:
  explicit DevWatch(std::vector<std::string> paths) {
    for (std::string& p : paths) {
      if (exists(p)) {
        WARN(p << " exists from before this test: not checked, not removed");
      } else {
        watched_.push_back(std::move(p));
      }
    }
  }
  ~DevWatch() { appeared(); }
  std::vector<std::string> appeared() {
    std::vector<std::string> out;
    for (const std::string& p : watched_) {
      struct stat st;
      if (lstat(p.c_str(), &st) != 0) continue;
      out.push_back(p);
      if (S_ISREG(st.st_mode)) unlink(p.c_str());
    }
    return out;
  }

 private:
  std::vector<std::string> watched_;
};

std::string drain(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

}  // namespace

TEST_CASE("log file: /dev/null and /dev/full are written as they are, never numbered") {
  DevWatch watch({"/dev/null.1", "/dev/full.1"});
  const CreatedFile null = create_log_file("/dev/null");
  CHECK(null.fd >= 0);
  CHECK(null.path == "/dev/null");
  CHECK(null.note.empty());
  CHECK(!null.created);
  if (null.fd >= 0) {
    struct stat st;
    REQUIRE(fstat(null.fd, &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK(write(null.fd, "x\n", 2) == 2);
    CHECK((fcntl(null.fd, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((fcntl(null.fd, F_GETFL) & O_NONBLOCK) == 0);
    close(null.fd);
  }
  const CreatedFile full = create_log_file("/dev/full");
  CHECK(full.path == "/dev/full");
  CHECK(full.note.empty());
  if (full.fd >= 0) {
    errno = 0;
    CHECK(write(full.fd, "x\n", 2) == -1);
    CHECK(errno == ENOSPC);
    close(full.fd);
  }
  CHECK(watch.appeared().empty());
  CHECK(is_char_device("/dev/null"));
  CHECK(is_char_device("/dev/full"));
}

TEST_CASE("log file: a FIFO with a reader is written to; without one: an error, nothing made") {
  TempDir dir;
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  {
    const CreatedFile none = create_log_file(dir / "fifo");
    CHECK(none.fd == -1);
    CHECK(none.error == "log " + (dir / "fifo") + ": cannot open (a FIFO without a reader)");
    CHECK(!exists(dir / "fifo.1"));
  }
  const int reader = open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  const CreatedFile f = create_log_file(dir / "fifo");
  CHECK(f.fd >= 0);
  CHECK(f.path == dir / "fifo");
  CHECK(f.note.empty());
  CHECK(!exists(dir / "fifo.1"));
  if (f.fd >= 0) {
    CHECK(write(f.fd, "line\n", 5) == 5);
    CHECK((fcntl(f.fd, F_GETFL) & O_NONBLOCK) == 0);  // the writer blocks for a slow reader
    close(f.fd);
  }
  CHECK(drain(reader) == "line\n");
  if (geteuid() == 0) {  // a FIFO someone else left at the name (only root can make one here)
    REQUIRE(mkfifo((dir / "theirs").c_str(), 0666) == 0);
    REQUIRE(chown((dir / "theirs").c_str(), 65534, 65534) == 0);
    const int their_reader = open((dir / "theirs").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    const CreatedFile g = create_log_file(dir / "theirs", "secret\n");
    CHECK(g.path == dir / "theirs.1");
    CHECK(g.created);
    if (g.fd >= 0) close(g.fd);
    CHECK(drain(their_reader).empty());
    close(their_reader);
  }
  close(reader);
}

TEST_CASE("log file: a symbolic link to a character device is followed (/dev/stderr)") {
  TempDir dir;
  DevWatch watch({"/dev/stderr.1"});
  REQUIRE(symlink("/dev/null", (dir / "quiet").c_str()) == 0);
  const CreatedFile f = create_log_file(dir / "quiet");
  CHECK(f.fd >= 0);
  CHECK(f.path == dir / "quiet");
  CHECK(f.note.empty());
  CHECK(!exists(dir / "quiet.1"));
  if (f.fd >= 0) close(f.fd);
  {
    // stderr a pipe: /dev/stderr -> /proc/self/fd/2 is that pipe.
    StderrCapture err;
    const CreatedFile e = create_log_file("/dev/stderr");
    CHECK(e.path == "/dev/stderr");
    if (e.fd >= 0) {
      CHECK(write(e.fd, "to stderr\n", 10) == 10);
      close(e.fd);
    }
    CHECK(err.take() == "to stderr\n");
  }
  CHECK(watch.appeared().empty());
}

TEST_CASE("log file: nothing is ever created in /dev") {
  TempDir dir;
  const std::string fresh = "/dev/cudapool-test-" + std::to_string(getpid()) + ".jsonl";
  DevWatch watch({fresh, fresh + ".1", "/dev/stderr.1"});
  const CreatedFile f = create_log_file(fresh);
  CHECK(f.fd == -1);
  CHECK(f.error == "log " + fresh + ": does not exist, and nothing is created in /dev");
  if (f.fd >= 0) close(f.fd);
  {
    // stderr a regular file: /dev/stderr names a file, not a device: refused, the file untouched.
    const int file = open((dir / "err.txt").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(file >= 0);
    const int saved = dup(2);
    dup2(file, 2);
    const CreatedFile e = create_log_file("/dev/stderr");
    dup2(saved, 2);
    close(saved);
    close(file);
    CHECK(e.fd == -1);
    CHECK(e.error ==
          "log /dev/stderr: not a character device or a FIFO, and nothing is created in /dev");
    if (e.fd >= 0) close(e.fd);
    CHECK(read_file(dir / "err.txt").empty());
  }
  CHECK(watch.appeared().empty());
}

TEST_CASE("logger: /dev/null is a log without a note; /dev/full: one warning, and it stays") {
  DevWatch watch({"/dev/null.1", "/dev/full.1"});
  {
    StderrCapture err;
    Logger* log = Logger::start("/dev/null", sample_header(), env_of({}), 64);
    CHECK(err.take().empty());
    REQUIRE(log != nullptr);
    CHECK(log->path() == "/dev/null");
    for (int i = 0; i < 1000; ++i) log->append(LogRecord{});
    log->finish(Summary{});
    CHECK(!log->counters().write_failed);
    delete log;
  }
  {
    StderrCapture err;
    Logger* log = Logger::start("/dev/full", sample_header(), env_of({}), 64);
    CHECK(log == nullptr);
    CHECK(err.take() ==
          "cudapool: log /dev/full: cannot write the header (No space left on device): no log\n");
    delete log;
  }
  CHECK(watch.appeared().empty());
  CHECK(is_char_device("/dev/null"));
  CHECK(is_char_device("/dev/full"));
}

TEST_CASE("logger: a FIFO as the log: header, events and summary reach the reader") {
  TempDir dir;
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const int reader = open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  StderrCapture err;
  Logger* log = Logger::start(dir / "fifo", sample_header(), env_of({}), 64);
  CHECK(err.take().empty());
  REQUIRE(log != nullptr);
  CHECK(log->path() == dir / "fifo");
  for (int i = 0; i < 3; ++i) log->append(LogRecord{});
  log->finish(Summary{});
  delete log;
  const std::string text = drain(reader);
  close(reader);
  CHECK(logtest::count_lines(text) == 5);
  CHECK(text.rfind("{\"schema\":\"cudapool.log/1\"", 0) == 0);
  CHECK(text.find("\"action\":\"summary\"") != std::string::npos);
  CHECK(!exists(dir / "fifo.1"));
}

TEST_CASE("logger: a FIFO whose reader left: one warning, logging stops, the process lives") {
  TempDir dir;
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const int reader = open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  Logger* log = Logger::start(dir / "fifo", sample_header(), env_of({}), 64);
  REQUIRE(log != nullptr);
  close(reader);
  StderrCapture err;
  for (int i = 0; i < 100; ++i) log->append(LogRecord{});
  log->finish(Summary{});  // EPIPE on the writer thread, never SIGPIPE
  CHECK(log->counters().write_failed);
  delete log;
  CHECK(err.take() == "cudapool: log " + (dir / "fifo") +
                          ": write failed (Broken pipe): logging stopped; the program goes on\n");
}

// Killed the moment its name appears (the parent polls for it): a log that exists has its header.
// Before the header was written with the create, the name appeared, the ring was allocated and
// only then the header written: such a kill left an empty file.
TEST_CASE("logger: a log file exists only with its header, however early the kill") {
  TempDir dir;
  int empty = 0, without_header = 0, seen = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string path = dir / ("k" + std::to_string(i) + ".jsonl");
    fflush(nullptr);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(20);
      Logger::start(path, sample_header(), env_of({}));
      pause();
      _exit(0);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!exists(path) && std::chrono::steady_clock::now() < deadline) {
    }
    kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (!exists(path)) continue;
    ++seen;
    const std::string text = read_file(path);
    empty += text.empty();
    without_header +=
        text.empty() || text.rfind("{\"schema\":\"cudapool.log/1\"", 0) != 0 || text.back() != '\n';
  }
  CHECK(seen == 20);
  CHECK(empty == 0);
  CHECK(without_header == 0);
}

TEST_CASE("log file: the first content is in before the name appears; the summary's messages") {
  TempDir dir;
  const CreatedFile f = create_log_file(dir / "a.log", "header\n");
  REQUIRE(f.fd >= 0);
  CHECK(f.created);
  CHECK(f.path == dir / "a.log");
  CHECK(lseek(f.fd, 0, SEEK_CUR) == 7);  // the logger goes on after it
  char target[4096] =
      {};  // the descriptor names the file (lsof, /proc/PID/fd), not "#123 (deleted)"
  CHECK(readlink(("/proc/self/fd/" + std::to_string(f.fd)).c_str(), target, sizeof target - 1) > 0);
  CHECK(std::string(target) == dir / "a.log");
  close(f.fd);
  CHECK(read_file(dir / "a.log") == "header\n");
  const CreatedFile g = create_log_file(dir / "a.log", "second\n", FileKind::kSummary);
  REQUIRE(g.fd >= 0);
  close(g.fd);
  CHECK(g.path == dir / "a.log.1");
  CHECK(g.note ==
        "summary " + (dir / "a.log") + " exists: writing to " + (dir / "a.log.1") + " instead");
  CHECK(read_file(dir / "a.log") == "header\n");
  CHECK(read_file(dir / "a.log.1") == "second\n");
  const CreatedFile missing = create_log_file(dir / "no/a.log", "x\n", FileKind::kSummary);
  CHECK(missing.error ==
        "summary " + (dir / "no/a.log") + ": cannot create (No such file or directory)");
  const CreatedFile full = create_log_file("/dev/full", "x\n", FileKind::kSummary);
  CHECK(full.fd == -1);
  CHECK(!full.created);
  CHECK(full.error == "summary /dev/full: cannot write the summary (No space left on device)");
  const CreatedFile null = create_log_file("/dev/null", "x\n");
  CHECK(null.fd >= 0);
  CHECK(!null.created);
  if (null.fd >= 0) close(null.fd);
}

TEST_CASE("log file: a header that does not fit (file size limit) leaves no file at all") {
  TempDir dir;
  fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(20);
    signal(SIGXFSZ, SIG_DFL);  // a C program's: before, the header's write ended it
    const rlimit limit{4, 4};
    setrlimit(RLIMIT_FSIZE, &limit);
    const CreatedFile f = create_log_file(dir / "a.log", "longer than four bytes\n");
    const bool ok = f.fd == -1 && f.error == "log " + (dir / "a.log") +
                                                 ": cannot write the header (File too large)";
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(!exists(dir / "a.log"));
  CHECK(!exists(dir / "a.log.1"));
}

TEST_CASE("log file: a FIFO whose reader left: an error, and the process lives (no SIGPIPE)") {
  TempDir dir;
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const int reader = open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  const CreatedFile f = create_log_file(dir / "fifo", "header\n");
  REQUIRE(f.fd >= 0);
  close(reader);
  {
    cudapool::log::NoWriteSignals no_signals;
    errno = 0;
    CHECK(write(f.fd, "x\n", 2) == -1);
    CHECK(errno == EPIPE);
  }
  sigset_t pending;
  sigpending(&pending);
  CHECK(sigismember(&pending, SIGPIPE) == 0);  // taken back, not left to kill us later
  close(f.fd);
}
