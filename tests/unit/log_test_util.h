// tests/unit/log_test_util.h: what the log tests share: a temporary directory removed at the end
// of a test, and reading a whole file.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace logtest
