// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_logger.cpp: the Logger (log/logger.h) end to end on real files: every line
// parses, header/events/summary in order with their fields, pool events through the EventSink,
// lossless under 8 producers and a tiny ring, the warnings (exactly one line each) for a bad
// template, an unwritable path, a full device and a file size limit, a SIGKILLed writer leaving
// whole lines, and a forked child that never writes the parent's file.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "log/logger.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"
#include "tests/unit/pool_test_util.h"

using cudapool::log::DeviceInfo;
using cudapool::log::EnvLookup;
using cudapool::log::HeaderInfo;
using cudapool::log::LogAction;
using cudapool::log::Logger;
using cudapool::log::LogRecord;
using cudapool::log::Summary;
using nlohmann::json;

namespace {

using logtest::count_lines;
using logtest::env_of;
using logtest::read_file;
using logtest::sample_header;
using logtest::StderrCapture;
using logtest::TempDir;

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> out;
  const std::string cmd = "ls -A '" + dir + "'";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char line[4096];
  while (fgets(line, sizeof line, p) != nullptr) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    out.push_back(s);
  }
  pclose(p);
  return out;
}

// The lines of a log; the file must end with a newline (whole lines only).
std::vector<std::string> log_lines(const std::string& path) {
  const std::string text = read_file(path);
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      lines.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return lines;
}

// Every line parsed; the first must be a header.
std::vector<json> parse_log(const std::string& path) {
  std::vector<json> out;
  for (const std::string& line : log_lines(path)) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) FAIL("not a JSON object: " << line);
    out.push_back(std::move(j));
  }
  REQUIRE(!out.empty());
  REQUIRE(out.front().value("schema", "") == "cudapool.log/1");
  REQUIRE(!out.front().contains("action"));
  return out;
}

bool is_summary(const json& j) {
  return j.value("action", "") == "summary";
}

template <class Pred>
bool eventually(Pred pred, int seconds = 5) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

off_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// Checks the fields every event line has, with their types.
void check_event_fields(const json& e) {
  CHECK(e.at("seq").is_number_unsigned());
  CHECK(e.at("t_ns").is_number_unsigned());
  CHECK(e.at("tid").is_number_unsigned());
  CHECK(e.at("dev").is_number_integer());
  CHECK(e.at("action").is_string());
  CHECK(e.at("ptr").is_string());
  CHECK(e.at("ptr").get<std::string>().rfind("0x", 0) == 0);
  CHECK(e.at("size").is_number_unsigned());
}

// A child process that runs fn and exits with its status (a REQUIRE in a child cannot be seen,
// so fn returns the exit code). Returns the wait status.
template <class Fn>
int run_child(Fn fn) {
  fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(20);  // a hang dies instead of blocking the suite
    _exit(fn());
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("logger: header, events and summary, every line valid JSON with its fields") {
  TempDir dir;
  StderrCapture err;
  const mode_t old_umask = umask(022);
  Logger* log =
      Logger::start(dir / "run-%p-%r-%h.jsonl", sample_header(), env_of({{"RANK", "2"}}), 64);
  umask(old_umask);
  CHECK(err.take().empty());
  REQUIRE(log != nullptr);
  CHECK(log->path() == dir / "run-4242-2-testhost.jsonl");
  CHECK(log->ring_capacity() == 64);
  struct stat st;
  REQUIRE(stat(log->path().c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);

  const auto my_tid = static_cast<std::uint64_t>(syscall(SYS_gettid));
  LogRecord alloc;
  alloc.action = LogAction::kAlloc;
  alloc.ptr = 0x7f0000000000;
  alloc.size = 1000;
  alloc.block_size = 1024;
  alloc.segment = 0x7f0000000000;
  alloc.cache_hit = false;
  alloc.frames = 2;
  alloc.backtrace[0] = 0x401000;
  alloc.backtrace[1] = 0x401234;
  CHECK(log->append(alloc) == 1);  // the seq given
  LogRecord stamped;               // t_ns and tid given: kept
  stamped.action = LogAction::kAllocManaged;
  stamped.t_ns = 77;
  stamped.tid = 99;
  stamped.seq = 12345;  // replaced: the logger numbers events
  stamped.device = 1;
  stamped.ptr = 0x1000;
  stamped.size = 4096;
  stamped.error = 0;
  CHECK(log->append(stamped) == 2);
  LogRecord bad;
  bad.action = LogAction::kBadFree;
  bad.ptr = 0x7f0000000010;
  bad.error = 1;
  log->append(bad);
  for (int a = 0; a <= static_cast<int>(cudapool::log::kLastLogAction); ++a) {
    LogRecord r;
    r.action = static_cast<LogAction>(a);
    r.ptr = 0x2000 + static_cast<std::uint64_t>(a);
    r.size = static_cast<std::uint64_t>(a) * 100;
    log->append(r);
  }
  const std::uint64_t events = 3 + static_cast<std::uint64_t>(cudapool::log::kLastLogAction) + 1;

  Summary summary;
  cudapool::pool::DeviceStats stats;
  stats.allocation[0].current = 1;
  summary.devices = {{0, stats}};
  cudapool::log::Leak leak;
  leak.ptr = 0x7f0000000000;
  leak.size = 1000;
  leak.block_size = 1024;
  leak.seq = 1;
  summary.leaks = {leak};
  log->finish(summary);
  log->finish(summary);            // once only
  CHECK(log->append(alloc) == 0);  // after finish: nothing
  CHECK(log->counters().appended == events);
  CHECK(log->counters().written == events);
  CHECK(!log->counters().write_failed);
  delete log;
  CHECK(err.take().empty());

  const std::vector<json> lines = parse_log(dir / "run-4242-2-testhost.jsonl");
  REQUIRE(lines.size() == events + 2);
  const json& h = lines.front();
  CHECK(h.at("pid") == 4242);
  CHECK(h.at("host") == "testhost");
  CHECK(h.at("argv") == json::array({"test", "--flag"}));
  CHECK(h.at("start_time") == "2023-11-14T22:13:20.000000Z");
  CHECK(h.at("conf") == "max_split_size_mb:128");
  CHECK(h.at("options").at("max_split_size") == 134217728);
  CHECK(h.at("options").at("expandable_segments") == false);
  CHECK(h.at("devices")[0].at("total_memory") == 80ull << 30);
  for (std::uint64_t i = 1; i <= events; ++i) {
    const json& e = lines[i];
    INFO(e.dump());
    check_event_fields(e);
    CHECK(e.at("seq") == i);
    CHECK(!is_summary(e));
  }
  const json& a = lines[1];
  CHECK(a.at("action") == "alloc");
  CHECK(a.at("tid") == my_tid);
  CHECK(a.at("t_ns").get<std::uint64_t>() > 0);
  CHECK(a.at("block_size") == 1024);
  CHECK(a.at("segment") == "0x7f0000000000");
  CHECK(a.at("cache_hit") == false);
  CHECK(a.at("backtrace") == json::array({"0x401000", "0x401234"}));
  CHECK(!a.contains("stream"));
  const json& m = lines[2];
  CHECK(m.at("action") == "alloc_managed");
  CHECK(m.at("t_ns") == 77);
  CHECK(m.at("tid") == 99);
  CHECK(m.at("dev") == 1);
  CHECK(!m.contains("error"));
  CHECK(lines[3].at("action") == "bad_free");
  CHECK(lines[3].at("error") == 1);
  for (int k = 0; k <= static_cast<int>(cudapool::log::kLastLogAction); ++k) {
    CHECK(lines[4 + k].at("action") == cudapool::log::action_name(static_cast<LogAction>(k)));
  }
  const json& s = lines.back();
  REQUIRE(is_summary(s));
  CHECK(s.at("schema") == "cudapool.log/1");
  CHECK(s.at("seq") == events + 1);
  CHECK(s.at("events") == events);
  CHECK(s.at("t_ns").get<std::uint64_t>() > 0);
  CHECK(s.at("devices").at("0").at("stats").at("allocation.all.current") == 1);
  CHECK(s.at("leaks")[0].at("ptr") == "0x7f0000000000");
  CHECK(s.at("log_errors") == json({{"write_failed", false}, {"records_lost", 0}}));
}

TEST_CASE("logger: the start's two clocks: start_t_ns is the monotonic clock of the events") {
  TempDir dir;
  HeaderInfo h = sample_header();
  h.start_unix_ns = 0;  // the logger reads both clocks
  timespec before_mono{}, before_wall{};
  clock_gettime(CLOCK_MONOTONIC, &before_mono);
  clock_gettime(CLOCK_REALTIME, &before_wall);
  Logger* log = Logger::start(dir / "clocks.jsonl", h, env_of({}));
  REQUIRE(log != nullptr);
  LogRecord r;
  r.action = LogAction::kAlloc;
  r.ptr = 0x1000;
  r.size = 1;
  log->append(r);
  log->finish(Summary{});
  delete log;
  const std::vector<json> lines = parse_log(dir / "clocks.jsonl");
  REQUIRE(lines.size() >= 2);
  const json &head = lines[0], &event = lines[1];
  const auto ns = [](const timespec& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(t.tv_nsec);
  };
  const std::uint64_t start_t = head.at("start_t_ns"), start_wall = head.at("start_unix_ns");
  CHECK(start_t >= ns(before_mono));
  CHECK(start_t <= event.at("t_ns").get<std::uint64_t>());
  CHECK(start_wall >= ns(before_wall));
  CHECK(start_wall - ns(before_wall) < 10'000'000'000ull);
}

TEST_CASE("logger: pool events through the EventSink") {
  TempDir dir;
  Logger* log = Logger::start(dir / "pool.jsonl", sample_header(), env_of({}));
  REQUIRE(log != nullptr);
  std::uintptr_t a = 0, b = 0;
  {
    pooltest::Harness h(pooltest::kGiB, pooltest::Options{}, log);
    a = h.alloc(1000);
    b = h.alloc(3 * pooltest::kMiB, 0x42);
    h.free(a);
    h.free(b);
    h.alloc(1000);
    h.empty_cache();
  }
  log->finish(Summary{});
  delete log;
  const std::vector<json> lines = parse_log(dir / "pool.jsonl");
  std::vector<std::string> actions;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    check_event_fields(lines[i]);
    actions.push_back(lines[i].at("action"));
  }
  const std::vector<std::string> expected = {
      "segment_alloc",  "alloc",          "segment_alloc",  "alloc", "free_requested",
      "free_completed", "free_requested", "free_completed", "alloc", "segment_free"};
  CHECK(std::vector<std::string>(actions.begin(), actions.begin() + 9) ==
        std::vector<std::string>(expected.begin(), expected.begin() + 9));
  const json& seg = lines[1];
  CHECK(seg.at("size") == 2 * pooltest::kMiB);
  const json& first = lines[2];
  CHECK(first.at("ptr") == seg.at("ptr"));
  CHECK(first.at("size") == 1000);
  CHECK(first.at("block_size") == 1024);
  CHECK(first.at("segment") == seg.at("ptr"));
  CHECK(first.at("cache_hit") == false);
  CHECK(lines[4].at("stream") == "0x42");
  CHECK(lines[9].at("cache_hit") == true);
  CHECK(is_summary(lines.back()));
}

TEST_CASE("logger: lossless, 8 threads x 100k records through a ring of 1024") {
  constexpr int kThreads = 8;
  constexpr std::uint64_t kPerThread = 100000;
  TempDir dir;
  Logger* log = Logger::start(dir / "big.jsonl", sample_header(), env_of({}), 1024);
  REQUIRE(log != nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([log, t] {
      LogRecord r;
      r.action = LogAction::kAlloc;
      r.device = t;
      for (std::uint64_t i = 0; i < kPerThread; ++i) {
        r.ptr = i;
        log->append(r);
      }
    });
  }
  for (auto& t : threads) t.join();
  log->finish(Summary{});
  const Logger::Counters c = log->counters();
  delete log;
  CHECK(c.appended == kThreads * kPerThread);
  CHECK(c.written == kThreads * kPerThread);
  CHECK(c.producer_waits > 0);  // the ring was full: producers waited instead of dropping

  const std::vector<json> lines = parse_log(dir / "big.jsonl");
  REQUIRE(lines.size() == kThreads * kPerThread + 2);
  std::vector<std::uint64_t> next(kThreads, 0);
  bool fields_ok = true, order_ok = true;
  for (std::uint64_t i = 1; i <= kThreads * kPerThread; ++i) {
    const json& e = lines[i];
    fields_ok = fields_ok && e.at("seq").is_number_unsigned() && e.at("action") == "alloc";
    // seq 1..800000, each once and in file order.
    order_ok = order_ok && e.at("seq").get<std::uint64_t>() == i;
    const int dev = e.at("dev").get<int>();
    REQUIRE(dev >= 0);
    REQUIRE(dev < kThreads);
    const auto ptr = std::stoull(e.at("ptr").get<std::string>(), nullptr, 16);
    order_ok = order_ok && ptr == next[dev];  // each thread's order kept
    ++next[dev];
  }
  CHECK(fields_ok);
  CHECK(order_ok);
  for (int t = 0; t < kThreads; ++t) CHECK(next[t] == kPerThread);
  CHECK(lines.back().at("events") == kThreads * kPerThread);
  CHECK(lines.back().at("seq") == kThreads * kPerThread + 1);

  // No line straddles a page boundary (what makes a kill leave whole lines): every boundary
  // follows a newline; the line before it is padded with spaces where needed.
  const std::string text = read_file(dir / "big.jsonl");
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t straddling = 0, padded = 0;
  for (std::size_t at = page; at < text.size(); at += page) {
    straddling += text[at - 1] != '\n';
    padded += text[at - 2] == ' ';
  }
  CHECK(straddling == 0);
  CHECK(padded > 0);
}

TEST_CASE("logger: an existing file or a symbolic link at the path: NAME.1 and one note") {
  TempDir dir;
  { std::ofstream(dir / "victim") << "precious\n"; }
  REQUIRE(symlink((dir / "victim").c_str(), (dir / "a.jsonl").c_str()) == 0);
  StderrCapture err;
  Logger* log = Logger::start(dir / "a.jsonl", sample_header(), env_of({}));
  const std::string text = err.take();
  REQUIRE(log != nullptr);
  CHECK(log->path() == dir / "a.jsonl.1");
  CHECK(text == "cudapool: log " + (dir / "a.jsonl") + " exists: writing to " +
                    (dir / "a.jsonl.1") + " instead\n");
  log->append(LogRecord{});
  log->finish(Summary{});
  delete log;
  CHECK(read_file(dir / "victim") == "precious\n");
  CHECK(parse_log(dir / "a.jsonl.1").size() == 3);
}

TEST_CASE("logger: a bad template or an unwritable path: nullptr and exactly one warning") {
  TempDir dir;
  {
    StderrCapture err;
    CHECK(Logger::start(dir / "log-%q", sample_header(), env_of({})) == nullptr);
    const std::string text = err.take();
    CHECK(count_lines(text) == 1);
    CHECK(text.rfind("cudapool: log path \"", 0) == 0);
    CHECK(text.find("unknown %q") != std::string::npos);
    CHECK(text.find(": no log\n") != std::string::npos);
  }
  {
    StderrCapture err;
    CHECK(Logger::start(dir / "log-%", sample_header(), env_of({})) == nullptr);
    CHECK(count_lines(err.take()) == 1);
  }
  CHECK(dir_entries(dir.path).empty());  // nothing created
  {
    StderrCapture err;
    CHECK(Logger::start(dir / "missing/sub/log", sample_header(), env_of({})) == nullptr);
    const std::string text = err.take();
    CHECK(text == "cudapool: log " + (dir / "missing/sub/log") +
                      ": cannot create (No such file or directory): no log\n");
  }
  if (geteuid() != 0) {
    REQUIRE(mkdir((dir / "ro").c_str(), 0500) == 0);
    StderrCapture err;
    CHECK(Logger::start(dir / "ro/log", sample_header(), env_of({})) == nullptr);
    const std::string text = err.take();
    CHECK(count_lines(text) == 1);
    CHECK(text.find("Permission denied") != std::string::npos);
  }
  {
    // A header that cannot be written: no log, one warning.
    StderrCapture err;
    const HeaderInfo h = sample_header();
    CHECK(Logger::start_on_fd(open("/dev/full", O_WRONLY | O_CLOEXEC), "/dev/full", &h) == nullptr);
    CHECK(err.take() ==
          "cudapool: log /dev/full: cannot write the header (No space left on device): no log\n");
  }
}

TEST_CASE("logger: a full device: one warning, appends never block, finish returns") {
  StderrCapture err;
  const int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  Logger* log = Logger::start_on_fd(fd, "/dev/full", nullptr, 16);
  REQUIRE(log != nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([log] {
      for (int i = 0; i < 20000; ++i) log->append(LogRecord{});  // far more than the ring holds
    });
  }
  for (auto& t : threads) t.join();
  log->finish(Summary{});
  const Logger::Counters c = log->counters();
  delete log;
  CHECK(c.write_failed);
  CHECK(c.appended == 40000);
  CHECK(c.written == 0);
  CHECK(err.take() ==
        "cudapool: log /dev/full: write failed (No space left on device): logging stopped; the "
        "program goes on\n");
}

TEST_CASE("logger: a descriptor the program closed and reused is never written") {
  TempDir dir;
  Logger* log = Logger::start(dir / "log.jsonl", sample_header(), env_of({}));
  REQUIRE(log != nullptr);
  int log_fd = -1;
  for (int fd = 0; fd < 4096 && log_fd < 0; ++fd) {
    char target[4096];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), target, sizeof target);
    if (n > 0 && std::string(target, n) == log->path()) log_fd = fd;
  }
  REQUIRE(log_fd >= 0);
  // The program closes the descriptor and gets the same number for a file of its own: the log
  // finds its file again by its name and goes on there.
  const int other = open((dir / "program-data").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(other >= 0);
  REQUIRE(dup2(other, log_fd) == log_fd);
  close(other);
  StderrCapture err;
  for (int i = 0; i < 100; ++i) log->append(LogRecord{});
  log->finish(Summary{});
  delete log;
  CHECK(err.take().empty());
  CHECK(read_file(dir / "program-data").empty());
  CHECK(parse_log(dir / "log.jsonl").size() == 102);  // the header, 100 events, the summary
  CHECK(fcntl(log_fd, F_GETFD) != -1);                // the program's descriptor left open
  close(log_fd);
}

TEST_CASE("logger: a write cut short (file size limit): whole lines only, summary says so") {
  TempDir dir;
  const std::string path = dir / "limited.jsonl";
  const std::string err_path = dir / "stderr.txt";
  constexpr std::uint64_t kRecords = 20000;
  const int status = run_child([&] {
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err_fd < 0 || dup2(err_fd, 2) < 0) return 10;
    signal(SIGXFSZ, SIG_DFL);  // a C program's: before, the summary's write ended it
    rlimit limit{};
    getrlimit(RLIMIT_FSIZE, &limit);
    const rlimit original = limit;
    limit.rlim_cur = 100000 + 37;  // the cut falls inside a line
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 11;
    Logger* log = Logger::start(path, sample_header(), env_of({}), 256);
    if (log == nullptr) return 12;
    LogRecord r;
    r.action = LogAction::kFreeRequested;
    for (std::uint64_t i = 0; i < kRecords; ++i) {
      r.ptr = i;
      log->append(r);
    }
    if (!eventually([&] { return log->counters().write_failed; })) return 13;
    setrlimit(RLIMIT_FSIZE, &original);  // room again: the summary lands
    log->finish(Summary{});
    return 0;
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string text = read_file(err_path);
  CHECK(text == "cudapool: log " + path +
                    ": write failed (File too large): logging stopped; the program goes on\n");
  const std::vector<json> lines = parse_log(path);  // every line whole (ends with a newline)
  REQUIRE(lines.size() > 2);
  const json& s = lines.back();
  REQUIRE(is_summary(s));
  const std::uint64_t event_lines = lines.size() - 2;
  CHECK(event_lines < kRecords);
  for (std::uint64_t i = 1; i <= event_lines; ++i) CHECK(lines[i].at("seq") == i);
  CHECK(s.at("events") == kRecords);
  CHECK(s.at("log_errors").at("write_failed") == true);
  CHECK(s.at("log_errors").at("records_lost") == kRecords - event_lines);
}

TEST_CASE("logger: a process killed while logging leaves only complete lines") {
  TempDir dir;
  const std::string path = dir / "killed.jsonl";
  fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(20);
    Logger* log = Logger::start(path, sample_header(), env_of({}), 4096);
    if (log == nullptr) _exit(1);
    LogRecord r;
    r.action = LogAction::kAlloc;
    r.frames = 4;
    for (std::uint64_t i = 0;; ++i) {
      r.ptr = i;
      r.size = i * 8;
      log->append(r);
    }
  }
  const bool grew = eventually([&] { return file_size(path) > 4'000'000; });
  kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(grew);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  const std::vector<json> lines = parse_log(path);  // ends with a newline, every line parses
  REQUIRE(lines.size() > 1000);
  bool ok = true;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    ok = ok && !is_summary(lines[i]) && lines[i].at("seq") == i &&
         lines[i].at("backtrace").size() == 4;
  }
  CHECK(ok);
}

TEST_CASE("logger: after fork, the child forgets the log: the parent's file has no child line") {
  TempDir dir;
  Logger* log = Logger::start(dir / "parent.jsonl", sample_header(), env_of({}), 64);
  REQUIRE(log != nullptr);
  LogRecord r;
  r.ptr = 1;
  for (int i = 0; i < 10; ++i) log->append(r);
  const int status = run_child([&] {
    log->forget_after_fork();
    log->forget_after_fork();  // once is enough; twice is harmless
    LogRecord c;
    c.ptr = 0xc41d;
    for (int i = 0; i < 1000; ++i) {  // more than the ring holds: must not wait
      if (log->append(c) != 0) return 3;
    }
    log->finish(Summary{});
    delete log;  // must neither join nor terminate
    return 0;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  r.ptr = 2;
  for (int i = 0; i < 10; ++i) log->append(r);
  log->finish(Summary{});
  delete log;
  const std::vector<json> lines = parse_log(dir / "parent.jsonl");
  REQUIRE(lines.size() == 22);
  for (std::size_t i = 1; i <= 20; ++i) {
    CHECK(lines[i].at("seq") == i);
    CHECK(lines[i].at("ptr") == (i <= 10 ? "0x1" : "0x2"));
  }
  CHECK(lines.back().at("events") == 20);
  CHECK(dir_entries(dir.path) == std::vector<std::string>{"parent.jsonl"});
}

TEST_CASE("logger: destroyed without finish: the events are written, no summary") {
  TempDir dir;
  Logger* log = Logger::start(dir / "nofinish.jsonl", sample_header(), env_of({}));
  REQUIRE(log != nullptr);
  for (int i = 0; i < 5; ++i) log->append(LogRecord{});
  delete log;
  const std::vector<json> lines = parse_log(dir / "nofinish.jsonl");
  REQUIRE(lines.size() == 6);
  CHECK(!is_summary(lines.back()));
}
