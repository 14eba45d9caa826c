// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_hostile.cpp: the log against a hostile destination or program (issue 26,
// items 3, 4, 5; log/descriptor.h, log/logger.h): a write past the file size limit fails with
// EFBIG instead of SIGXFSZ ending the process; a pipe whose reader stopped reading stops the log
// after the stall limit (the appends, finish() and a first write never wait for ever), while a
// slow reader that keeps reading loses nothing; a program that closes every descriptor and gives
// the log's number to a file of its own keeps its whole log, and its file gets no log line. Each
// scenario that could hang runs in a child process with an alarm (a hang guard, not a timing
// check). The same for a compressed log (log/compression.h): a stalled reader and a full device.
// Not here: the ordinary lines (test_log_logger.cpp), destinations (test_log_destination).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "log/compression.h"
#include "log/descriptor.h"
#include "log/logger.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::kStalled;
using cudapool::log::Leak;
using cudapool::log::Logger;
using cudapool::log::LogRecord;
using cudapool::log::NoWriteSignals;
using cudapool::log::Summary;
using cudapool::log::write_all;
using nlohmann::json;

namespace {

using logtest::count_lines;
using logtest::env_of;
using logtest::read_file;
using logtest::sample_header;
using logtest::TempDir;

// Runs fn in a child process whose stderr goes to err_path, with SIGXFSZ and SIGPIPE at their
// default actions (a C program's) and an alarm as hang guard; returns the wait status. fn returns
// the exit code (a CHECK in a child is not seen).
template <class Fn>
int in_child(const std::string& err_path, Fn fn) {
  fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(60);
    signal(SIGXFSZ, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (err < 0 || dup2(err, 2) < 0) _exit(100);
    _exit(fn());
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

// "exit N" or "signal N": for a message when a child did not exit 0.
std::string how(int status) {
  return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status));
}

LogRecord event(std::uint64_t i) {
  LogRecord r;
  r.action = cudapool::log::LogAction::kFreeRequested;
  r.ptr = 0x1000 + i;
  return r;
}

// A summary line far longer than a pipe holds (64 KiB).
Summary with_leaks(std::size_t n) {
  Summary s;
  for (std::size_t i = 0; i < n; ++i) {
    Leak l;
    l.ptr = 0x7f0000000000 + i;
    l.size = 1000;
    l.block_size = 1024;
    s.leaks.push_back(l);
  }
  return s;
}

std::string fd_target(int fd) {
  char target[4096] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

int fd_of(const std::string& path) {
  for (int fd = 0; fd < 4096; ++fd) {
    if (fd_target(fd) == path) return fd;
  }
  return -1;
}

}  // namespace

TEST_CASE(
    "no write signals: past the file size limit a write fails with EFBIG, the process lives") {
  TempDir dir;
  const int status = in_child(dir / "err", [&] {
    const int fd = open((dir / "f").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    const rlimit limit{10, 10};
    if (fd < 0 || setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
    int err = 0;
    {
      NoWriteSignals no_signals;
      err = write_all(fd, "more than ten bytes\n");
    }
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGXFSZ) == 1) return 11;  // taken back, not left to kill us later
    return err == EFBIG ? 0 : 12;
  });
  CHECK(how(status) == "exit 0");  // before: signal 25 (SIGXFSZ)
}

TEST_CASE("write_all: a FIFO whose reader does not read: a stall after the limit, not a wait") {
  int fds[2];
  REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
  const std::string data(256 * 1024, 'x');  // four times what the pipe holds
  CHECK(write_all(fds[1], data, 200) == kStalled);
  CHECK(cudapool::log::failure_text(kStalled, 200) == "reader stalled: nothing written for 0.2 s");
  // A reader that reads, however slowly, is no stall.
  std::atomic<bool> done{false};
  std::thread reader([&] {
    char buf[4096];
    while (!done.load()) {
      if (read(fds[0], buf, sizeof buf) <= 0) break;
      usleep(2000);
    }
  });
  CHECK(write_all(fds[1], data, 5000) == 0);
  done = true;
  close(fds[1]);
  reader.join();
  close(fds[0]);
}

namespace {

// A logger (stall limit 0.3 s) on a pipe whose reader never reads: appends `events` records, then
// finish() with `summary`, then the reader closes its end (the writer's write fails, EPIPE: it
// ends, and the logger can be deleted). In a child; returns its stderr, or the child's status.
// name: the log's name (".zst", ".gz": written compressed).
std::string stalled_pipe(std::size_t ring, std::uint64_t events, const Summary& summary,
                         const std::string& name = "test-pipe") {
  TempDir dir;
  const int status = in_child(dir / "err", [&] {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return 10;
    Logger* log = Logger::start_on_fd(fds[1], name, nullptr, ring, /*stall_ms=*/300);
    if (log == nullptr) return 11;
    if (log->compression() != cudapool::log::compression_of(name)) return 13;
    for (std::uint64_t i = 0; i < events; ++i) log->append(event(i));
    log->finish(summary);
    if (!log->counters().write_failed) return 12;
    close(fds[0]);
    delete log;
    return 0;
  });
  return how(status) == "exit 0" ? read_file(dir / "err") : how(status);
}

std::string stall_warning(const std::string& name) {
  return "cudapool: log " + name +
         ": reader stalled (nothing written for 0.3 s): logging stopped; the program goes on\n";
}
const std::string kStallWarning = stall_warning("test-pipe");

}  // namespace

TEST_CASE("logger: a reader that stopped reading: appends and finish stop waiting, one warning") {
  // The pipe holds about 400 lines, the ring 16: the rest waited for ever before.
  CHECK(stalled_pipe(16, 20000, Summary{}) == kStallWarning);
}

TEST_CASE("logger: a reader that stops reading at exit: finish returns after the stall limit") {
  // A summary line of about 450 KiB: the writer blocks in its write at exit.
  CHECK(stalled_pipe(64, 10, with_leaks(3000)) == kStallWarning);
}

TEST_CASE("compressed log: a reader that stopped reading: the stall limit holds, one warning") {
  // These lines compress to a few bytes each: 300000 of them fill the pipe whatever the codec.
  for (const char* name : {"test-pipe.zst", "test-pipe.gz"}) {
    INFO(name);
    CHECK(stalled_pipe(16, 300000, Summary{}, name) == stall_warning(name));
  }
}

TEST_CASE("compressed log: a full device: one warning, logging stops, the program goes on") {
  for (const char* name : {"full.jsonl.zst", "full.jsonl.gz"}) {
    INFO(name);
    TempDir dir;
    const int status = in_child(dir / "err", [&] {
      const int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
      if (fd < 0) return 10;
      Logger* log = Logger::start_on_fd(fd, name, nullptr, 64);
      if (log == nullptr) return 11;
      if (log->compression() == cudapool::log::Compression::kNone) return 12;
      for (std::uint64_t i = 0; i < 100000; ++i) log->append(event(i));
      log->finish(Summary{});
      return log->counters().write_failed ? 0 : 13;
    });
    CHECK(how(status) == "exit 0");
    CHECK(read_file(dir / "err") ==
          std::string("cudapool: log ") + name +
              ": write failed (No space left on device): logging stopped; the program goes on\n");
  }
}

TEST_CASE("logger: a slow reader that keeps reading loses nothing") {
  TempDir dir;
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const int reader = open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  REQUIRE(fcntl(reader, F_SETFL, 0) == 0);  // blocking reads from now on
  logtest::StderrCapture err;
  // Pauses of 0.5 s (the writer makes no progress meanwhile), well inside a stall limit of 3 s.
  Logger* log = Logger::start(dir / "fifo", sample_header(), env_of({}), 16, /*stall_ms=*/3000);
  REQUIRE(log != nullptr);
  std::string text;
  std::thread slow([&] {
    char buf[4096];
    int reads = 0;
    for (ssize_t n; (n = read(reader, buf, sizeof buf)) > 0; usleep(++reads < 4 ? 500000 : 2000)) {
      text.append(buf, static_cast<std::size_t>(n));
    }
  });
  for (std::uint64_t i = 0; i < 3000; ++i) log->append(event(i));
  log->finish(Summary{});
  const Logger::Counters c = log->counters();
  delete log;  // closes the FIFO: the reader sees its end
  slow.join();
  close(reader);
  CHECK(err.take().empty());
  CHECK(!c.write_failed);
  CHECK(c.producer_waits > 0);  // the ring was full: the reader was the slow part
  CHECK(count_lines(text) == 3002);
  CHECK(text.find("\"records_lost\":0}") != std::string::npos);
}

TEST_CASE("logger: a program closes every descriptor: the log goes on, its file gets no line") {
  TempDir dir;
  const std::string path = dir / "daemon.jsonl";
  const int status = in_child(dir / "err", [&] {
    Logger* log = Logger::start(path, sample_header(), env_of({}), 64);
    if (log == nullptr) return 10;
    for (std::uint64_t i = 0; i < 100; ++i) log->append(event(i));
    const int log_fd = fd_of(path);
    if (log_fd < 0) return 11;
    // A daemon: every descriptor but 0-2 closed one by one, then a file of its own, which gets
    // the number the log had (the worst case: a descriptor check alone would see the other file).
    if (chdir("/") != 0) return 12;
    for (int fd = 3; fd < 4096; ++fd) close(fd);
    const int mine = open((dir / "program-data").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (mine < 0 || dup2(mine, log_fd) != log_fd) return 13;
    for (std::uint64_t i = 100; i < 200; ++i) log->append(event(i));
    log->finish(Summary{});
    if (write(log_fd, "program\n", 8) != 8) return 14;
    delete log;
    return fcntl(log_fd, F_GETFD) != -1 ? 0 : 15;  // the program's descriptor left open
  });
  CHECK(how(status) == "exit 0");
  CHECK(read_file(dir / "err").empty());
  CHECK(read_file(dir / "program-data") == "program\n");
  const std::string text = read_file(path);
  REQUIRE(count_lines(text) == 202);
  const json summary = json::parse(text.substr(text.rfind('\n', text.size() - 2) + 1));
  CHECK(summary.at("events") == 200);
  CHECK(summary.at("log_errors") == json({{"write_failed", false}, {"records_lost", 0}}));
}

TEST_CASE("logger: the log's descriptor closed and another file at its name: never written") {
  TempDir dir;
  const std::string path = dir / "moved.jsonl";
  const int status = in_child(dir / "err", [&] {
    Logger* log = Logger::start(path, sample_header(), env_of({}), 64);
    if (log == nullptr) return 10;
    const int log_fd = fd_of(path);
    if (log_fd < 0 || close(log_fd) != 0) return 11;
    // Not the same file any more (device and inode): the log stops rather than write there.
    if (rename(path.c_str(), (dir / "old.jsonl").c_str()) != 0) return 12;
    const int other = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (other < 0 || write(other, "theirs\n", 7) != 7) return 13;
    for (std::uint64_t i = 0; i < 10; ++i) log->append(event(i));
    log->finish(Summary{});
    delete log;
    return 0;
  });
  CHECK(how(status) == "exit 0");
  CHECK(read_file(path) == "theirs\n");
  CHECK(count_lines(read_file(dir / "old.jsonl")) == 1);  // the header
  const std::string err = read_file(dir / "err");
  CHECK(err.rfind("cudapool: log " + path + ": write failed (Bad file descriptor, and " + path +
                      " cannot be opened again (another file has that name now)): logging "
                      "stopped; the program goes on\n",
                  0) == 0);
  CHECK(count_lines(err) == 1);
}
