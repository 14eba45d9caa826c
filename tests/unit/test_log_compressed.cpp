// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_compressed.cpp: the log written compressed (log/compression.h, the Logger
// with a .zst or .gz name), checked with the zstd and gzip programs: the same lines as a plain log
// of the same records; a complete stream at the end (zstd -t, gzip -t); the file cut at every page
// boundary (where the kernel stops a killed writer) still decodes to whole lines, a prefix of the
// log; wait_written_before_exit() leaves a complete file; a file size limit leaves whole lines;
// a stream whose bytes were lost goes on as one valid stream; a library that cannot be loaded gives
// a plain log under the name less its extension (a FIFO: no log), with one warning. Not here: the
// shim's compressed logs (tests/fakecuda/log_compressed.sh), the plain log (test_log_logger.cpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "log/compression.h"
#include "log/logger.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::Compression;
using cudapool::log::Compressor;
using cudapool::log::LogAction;
using cudapool::log::Logger;
using cudapool::log::LogRecord;
using cudapool::log::Summary;

namespace {

using logtest::env_of;
using logtest::read_file;
using logtest::sample_header;
using logtest::StderrCapture;
using logtest::TempDir;

struct Decoded {
  std::string text;  // what the program wrote on stdout
  int status = -1;   // its exit status
};

// `zstd -dc` or `gzip -dc` of a file (its status says whether the stream is complete and valid).
Decoded decode(Compression kind, const std::string& path) {
  const std::string cmd = std::string(kind == Compression::kZstd ? "zstd -qdc '" : "gzip -dc '") +
                          path + "' 2>/dev/null";
  Decoded out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[65536];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.text.append(buf, n);
  const int status = pclose(p);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return out;
}

bool have_programs() {
  return std::system("zstd --version >/dev/null 2>&1 && gzip --version >/dev/null 2>&1") == 0;
}

// A plain log's text with the page padding taken out (spaces before a line's newline).
std::string unpadded(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::size_t last = end;
    while (last > start && text[last - 1] == ' ') --last;
    out.append(text, start, last - start);
    out.push_back('\n');
    start = end + 1;
  }
  return out;
}

// Records like the shim's, every field set (the logger's own clock and thread id not used), with
// figures that vary as a real job's do.
LogRecord record(std::uint64_t i) {
  std::uint64_t x = i * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  LogRecord r;
  r.action = i % 3 == 0   ? LogAction::kAlloc
             : i % 3 == 1 ? LogAction::kFreeRequested
                          : LogAction::kFreeCompleted;
  r.t_ns = 1000000000ull + i * 3217 + (x & 1023);
  r.tid = 4242 + (i & 3);
  r.ptr = 0x7f0000000000ull + ((x >> 8) & 0xffffff) * 512;
  r.size = 512 + (x & 0xfffff);
  r.block_size = (r.size + 511) / 512 * 512;
  r.latency_ns = 200 + (x >> 40) % 5000;
  if (r.action == LogAction::kAlloc) {
    r.frames = 4;
    for (int f = 0; f < 4; ++f) r.backtrace[f] = 0x7fee8ce00000ull + (x >> (f * 8)) % 4096;
  }
  return r;
}

Summary summary() {
  Summary s;
  s.t_ns = 9999999999ull;
  return s;
}

// A log of n records at path (its name says how it is written), ended with a summary line.
void write_log(const std::string& path, std::uint64_t n, std::size_t ring = 4096) {
  Logger* log = Logger::start(path, sample_header(), env_of({}), ring);
  REQUIRE(log != nullptr);
  REQUIRE(log->path() == path);
  for (std::uint64_t i = 0; i < n; ++i) REQUIRE(log->append(record(i)) == i + 1);
  log->finish(summary());
  delete log;
}

off_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

Compression kind_of(const std::string& name) {
  return cudapool::log::compression_of(name);
}

}  // namespace

TEST_CASE("compression: which names ask for it") {
  using cudapool::log::compression_of;
  using cudapool::log::without_compression_extension;
  CHECK(compression_of("run.jsonl.zst") == Compression::kZstd);
  CHECK(compression_of("/a/b/run-%p.zst") == Compression::kZstd);
  CHECK(compression_of("run.jsonl.gz") == Compression::kGzip);
  CHECK(compression_of("run.jsonl") == Compression::kNone);
  CHECK(compression_of("run.jsonl.zst.1") == Compression::kNone);
  CHECK(compression_of("run.ZST") == Compression::kNone);
  CHECK(compression_of(".zst") == Compression::kNone);
  CHECK(compression_of("/tmp/.gz") == Compression::kNone);
  CHECK(compression_of("x.tgz") == Compression::kNone);
  CHECK(without_compression_extension("/tmp/run.jsonl.zst") == "/tmp/run.jsonl");
  CHECK(without_compression_extension("run.gz") == "run");
  CHECK(without_compression_extension("run.jsonl") == "run.jsonl");
}

TEST_CASE("compressed log: the same lines as a plain log, and a complete stream") {
  REQUIRE(have_programs());  // scripts/cudapool setup installs zstd
  TempDir dir;
  constexpr std::uint64_t kRecords = 30000;
  write_log(dir / "plain.jsonl", kRecords);
  const std::string plain = unpadded(read_file(dir / "plain.jsonl"));
  REQUIRE(std::count(plain.begin(), plain.end(), '\n') == kRecords + 2);
  for (const char* name : {"log.jsonl.zst", "log.jsonl.gz"}) {
    INFO(name);
    const std::string path = dir / name;
    write_log(path, kRecords);
    const Decoded d = decode(kind_of(name), path);
    CHECK(d.status == 0);  // the frame or member ended: a complete file
    CHECK(d.text == plain);
    CHECK(file_size(path) * 4 < static_cast<off_t>(plain.size()));
  }
}

TEST_CASE("compressed log: cut at any page boundary, the file decodes to whole lines") {
  REQUIRE(have_programs());  // scripts/cudapool setup installs zstd
  TempDir dir;
  const long page = sysconf(_SC_PAGESIZE);
  for (const char* name : {"cut.jsonl.zst", "cut.jsonl.gz"}) {
    INFO(name);
    const std::string path = dir / name;
    write_log(path, 40000);
    const std::string file = read_file(path);
    const std::string whole = decode(kind_of(name), path).text;
    REQUIRE(!whole.empty());
    const std::string cut = dir / (std::string("prefix-") + name);
    std::size_t cuts = 0, bad = 0, grew = 0, last = 0;
    for (std::size_t at = static_cast<std::size_t>(page); at < file.size(); at += page) {
      FILE* f = std::fopen(cut.c_str(), "wb");
      REQUIRE(f != nullptr);
      std::fwrite(file.data(), 1, at, f);
      std::fclose(f);
      const std::string text = decode(kind_of(name), cut).text;
      ++cuts;
      // Whole lines (the text ends with a newline), and the beginning of the log.
      const bool ok =
          !text.empty() && text.back() == '\n' && whole.compare(0, text.size(), text) == 0;
      bad += ok ? 0 : 1;
      grew += text.size() > last ? 1 : 0;
      last = text.size();
    }
    INFO(cuts << " cuts");
    CHECK(cuts > 20);
    CHECK(bad == 0);
    // The cuts do find more and more of the log (a chunk, up to 128 KiB of lines: 1-6 pages).
    CHECK(grew > cuts / 8);
  }
}

TEST_CASE("compressed log: wait_written_before_exit closes the frame: a complete file") {
  REQUIRE(have_programs());  // scripts/cudapool setup installs zstd
  TempDir dir;
  for (const char* name : {"exit.jsonl.zst", "exit.jsonl.gz"}) {
    INFO(name);
    const std::string path = dir / name;
    Logger* log = Logger::start(path, sample_header(), env_of({}), 1024);
    REQUIRE(log != nullptr);
    for (std::uint64_t i = 0; i < 5000; ++i) log->append(record(i));
    REQUIRE(log->wait_written_before_exit(10000));
    Decoded d = decode(kind_of(name), path);  // the writer is alive; the file is complete
    CHECK(d.status == 0);
    CHECK(std::count(d.text.begin(), d.text.end(), '\n') == 5001);
    // The process goes on (an exec that failed): more lines, frames open again, the end.
    log->resume_after_exit_wait();
    for (std::uint64_t i = 5000; i < 8000; ++i) log->append(record(i));
    log->finish(summary());
    delete log;
    d = decode(kind_of(name), path);
    CHECK(d.status == 0);
    CHECK(std::count(d.text.begin(), d.text.end(), '\n') == 8002);
    CHECK(d.text.find("\"action\":\"summary\"", d.text.rfind('\n', d.text.size() - 2)) !=
          std::string::npos);  // the last line
  }
}

TEST_CASE("compressed log: a file size limit: one warning, whole lines, the program goes on") {
  REQUIRE(have_programs());  // scripts/cudapool setup installs zstd
  TempDir dir;
  for (const char* name : {"limited.jsonl.zst", "limited.jsonl.gz"}) {
    INFO(name);
    const std::string path = dir / name;
    const std::string err_path = dir / "stderr.txt";
    fflush(nullptr);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(60);  // a hang guard
      const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (err < 0 || dup2(err, 2) < 0) _exit(10);
      signal(SIGXFSZ, SIG_DFL);  // a C program's
      rlimit limit{};
      getrlimit(RLIMIT_FSIZE, &limit);
      limit.rlim_cur = 50000 + 37;
      if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(11);
      Logger* log = Logger::start(path, sample_header(), env_of({}), 256);
      if (log == nullptr) _exit(12);
      for (std::uint64_t i = 0; i < 100000; ++i) log->append(record(i));
      log->finish(summary());
      _exit(log->counters().write_failed ? 0 : 13);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(read_file(err_path) ==
          "cudapool: log " + path +
              ": write failed (File too large): logging stopped; the program goes on\n");
    CHECK(file_size(path) <= 50000 + 37);
    const std::string text = decode(kind_of(name), path).text;
    const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    CHECK(lines > 100);
    REQUIRE(!text.empty());
    CHECK(text.back() == '\n');
  }
}

TEST_CASE("compressor: bytes lost on the way: the stream the file holds stays valid") {
  REQUIRE(have_programs());  // scripts/cudapool setup installs zstd
  TempDir dir;
  for (const Compression kind : {Compression::kZstd, Compression::kGzip}) {
    INFO(cudapool::log::compression_name(kind));
    std::string error;
    std::unique_ptr<Compressor> c = Compressor::create(kind, &error);
    REQUIRE(c != nullptr);
    std::string file, out;
    // A chunk written; one lost (never in the file), and one lost after padding was asked for;
    // then more lines, the end: the file decodes to the written lines, and is complete.
    REQUIRE(c->add("{\"a\":1}\n{\"a\":2}\n", out));
    REQUIRE(c->sync(out));
    file += out;
    c->commit();
    out.clear();
    REQUIRE(c->add("{\"lost\":1}\n", out));
    REQUIRE(c->sync(out));
    CHECK(c->padding(3, out) >= 3);
    c->lost();
    out.clear();
    REQUIRE(c->add("{\"lost\":2}\n", out));
    c->lost();
    out.clear();
    REQUIRE(c->add("{\"b\":3}\n", out));
    REQUIRE(c->sync(out));
    // Padding between two chunks of the same frame decodes to nothing.
    const std::size_t pad = c->padding(7, out);
    CHECK(pad >= 7);
    CHECK(pad < 7 + 8);
    REQUIRE(c->add("{\"b\":4}\n", out));
    REQUIRE(c->end(out));
    file += out;
    c->commit();
    const std::string path = dir / (kind == Compression::kZstd ? "lost.zst" : "lost.gz");
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
    const Decoded d = decode(kind, path);
    CHECK(d.status == 0);
    CHECK(d.text == "{\"a\":1}\n{\"a\":2}\n{\"b\":3}\n{\"b\":4}\n");
  }
}

TEST_CASE("compressed log: the library cannot be loaded: plain under the name less .zst") {
  TempDir dir;
  cudapool::log::set_compression_library("libcudapool-test-no-such-library.so.1");
  StderrCapture err;
  Logger* log = Logger::start(dir / "run.jsonl.zst", sample_header(), env_of({}), 64);
  const std::string text = err.take();
  cudapool::log::set_compression_library(nullptr);
  REQUIRE(log != nullptr);
  CHECK(log->path() == dir / "run.jsonl");
  CHECK(log->compression() == Compression::kNone);
  log->append(record(0));
  log->finish(summary());
  delete log;
  CHECK(text == "cudapool: log " + (dir / "run.jsonl.zst") +
                    ": zstd needs libzstd.so.1 (libcudapool-test-no-such-library.so.1: cannot "
                    "open shared object file: No such file or directory): writing " +
                    (dir / "run.jsonl") + " uncompressed\n");
  CHECK(file_size(dir / "run.jsonl.zst") == -1);
  const std::string plain = read_file(dir / "run.jsonl");
  CHECK(plain.rfind("{\"schema\":\"cudapool.log/1\"", 0) == 0);
  CHECK(std::count(plain.begin(), plain.end(), '\n') == 3);
}

TEST_CASE("compressed log: a FIFO named .gz without the library: no log, one warning") {
  TempDir dir;
  const std::string fifo = dir / "log.jsonl.gz";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  cudapool::log::set_compression_library("libcudapool-test-no-such-library.so.1");
  StderrCapture err;
  Logger* log = Logger::start(fifo, sample_header(), env_of({}), 64);
  const std::string text = err.take();
  cudapool::log::set_compression_library(nullptr);
  CHECK(log == nullptr);
  CHECK(text == "cudapool: log " + fifo +
                    ": gzip needs libz.so.1 (libcudapool-test-no-such-library.so.1: cannot open "
                    "shared object file: No such file or directory): no log\n");
  char byte;
  CHECK(read(reader, &byte, 1) <= 0);  // nothing was written to it
  close(reader);
}

TEST_CASE("compressed log: through a pipe (no pages), the reader gets one valid stream") {
  REQUIRE(have_programs());  // scripts/cudapool setup installs zstd
  TempDir dir;
  for (const char* name : {"pipe.zst", "pipe.gz"}) {
    INFO(name);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::string received;
    std::thread reader([&] {
      char buf[65536];
      for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) received.append(buf, n);
    });
    const cudapool::log::HeaderInfo header = sample_header();
    Logger* log = Logger::start_on_fd(fds[1], name, &header, 1024);
    REQUIRE(log != nullptr);
    CHECK(log->compression() == kind_of(name));
    for (std::uint64_t i = 0; i < 20000; ++i) log->append(record(i));
    log->finish(summary());
    delete log;  // closes the pipe's write end
    reader.join();
    close(fds[0]);
    const std::string path = dir / name;
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(received.data(), 1, received.size(), f);
    std::fclose(f);
    const Decoded d = decode(kind_of(name), path);
    CHECK(d.status == 0);
    CHECK(std::count(d.text.begin(), d.text.end(), '\n') == 20002);
  }
}
