// SPDX-License-Identifier: Apache-2.0
// tests/unit/log_test_util.h: what the log tests share: a temporary directory removed at the end
// of a test, reading a whole file, capturing stderr, an injected environment, a sample header.
// Not a test itself, and nothing here checks the code under test.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "log/format.h"
#include "log/path_template.h"
#include "tests/unit/catch.h"

namespace logtest {

struct TempDir {
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base ? base : "/tmp") + "/cudapool-log-test-XXXXXX";
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0) {
    }
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Whether a name exists (a link not followed).
inline bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// The temporary a file written whole goes through (log/rewritten_file.h, log/whole_file.h).
inline std::string temporary_of(const std::string& path) {
  return path + ".tmp." + std::to_string(getpid());
}

// Captures what is written to file descriptor 2 in between.
class StderrCapture {
 public:
  StderrCapture() {
    fflush(stderr);
    REQUIRE(pipe2(fds_, O_CLOEXEC) == 0);
    fcntl(fds_[0], F_SETFL, O_NONBLOCK);
    saved_ = dup(2);
    REQUIRE(saved_ >= 0);
    dup2(fds_[1], 2);
  }
  ~StderrCapture() { take(); }
  std::string take() {
    if (saved_ < 0) return text_;
    fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
    close(fds_[1]);
    char buf[4096];
    for (ssize_t n; (n = read(fds_[0], buf, sizeof buf)) > 0;) text_.append(buf, n);
    close(fds_[0]);
    return text_;
  }

 private:
  int fds_[2] = {-1, -1};
  int saved_ = -1;
  std::string text_;
};

inline std::size_t count_lines(const std::string& text) {
  std::size_t n = 0;
  for (const char c : text) n += c == '\n';
  return n;
}

inline cudapool::log::EnvLookup env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    const auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

inline cudapool::log::HeaderInfo sample_header() {
  cudapool::log::HeaderInfo h;
  h.version = "0.1.0";
  h.host = "testhost";
  h.executable = "/usr/bin/test";
  h.argv = {"test", "--flag"};
  h.conf = "max_split_size_mb:128";
  h.conf_source = "CUDAPOOL_CONF";
  h.pid = 4242;
  h.start_unix_ns = 1700000000000000000ull;
  h.options = {{"max_split_size", "134217728"}, {"expandable_segments", "false"}};
  h.devices = {cudapool::log::DeviceInfo{0, "Fake GPU", 80ull << 30}};
  return h;
}

}  // namespace logtest
