// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_rewritten_file.cpp: a file one process makes and rewrites whole
// (log/rewritten_file.h, the CUDAPOOL_METRICS file's mechanism): made only where the name is
// free, each version put whole, never over a file it did not make (a file, a link, a FIFO, the
// file replaced or removed between two writes: stopped, the other file left), nothing in /dev,
// removed only while it is still its own, no write after remove() (also while another thread
// writes) until reopen(). Needs no root and touches nothing in /dev that exists. Not here: the
// shim's use of it (tests/fakecuda/metrics_file_check.py).
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "log/rewritten_file.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::RewrittenFile;
using Outcome = cudapool::log::RewrittenFile::Outcome;
using logtest::exists;
using logtest::read_file;
using logtest::TempDir;
using logtest::temporary_of;

namespace {

ino_t inode(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

}  // namespace

TEST_CASE("rewritten file: made at a free name, replaced whole, removed at the end") {
  TempDir dir;
  const std::string path = dir / "m.prom";
  RewrittenFile file(path);
  std::string why;
  REQUIRE(file.write("one\n", &why) == Outcome::kWritten);
  CHECK(read_file(path) == "one\n");
  const ino_t first = inode(path);
  REQUIRE(file.write("two\n", &why) == Outcome::kWritten);
  CHECK(read_file(path) == "two\n");
  CHECK(inode(path) != first);  // a new file put at the name, not the old one rewritten
  CHECK_FALSE(exists(temporary_of(path)));
  file.remove(0);
  CHECK_FALSE(exists(path));
  CHECK(file.write("three\n", &why) == Outcome::kIdle);  // removed: nothing more
  CHECK_FALSE(exists(path));
  file.reopen();
  CHECK(file.write("four\n", &why) == Outcome::kWritten);
  CHECK(read_file(path) == "four\n");
  file.remove(0);
  CHECK_FALSE(exists(path));
}

TEST_CASE("rewritten file: a name that is taken is left as it is") {
  TempDir dir;
  const std::string target = dir / "target";
  write_text(target, "the user's\n");
  const std::string file_path = dir / "file.prom", link_path = dir / "link.prom",
                    dangling = dir / "dangling.prom", fifo = dir / "fifo.prom";
  write_text(file_path, "the user's\n");
  REQUIRE(symlink(target.c_str(), link_path.c_str()) == 0);
  REQUIRE(symlink((dir / "nowhere").c_str(), dangling.c_str()) == 0);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {file_path, link_path, dangling, fifo}) {
    INFO(path);
    const ino_t before = inode(path);
    RewrittenFile file(path);
    std::string why;
    CHECK(file.write("metrics\n", &why) == Outcome::kStopped);
    CHECK(why == path + " exists and this process did not make it: it is left as it is");
    CHECK(file.stopped());
    CHECK(file.write("metrics\n", &why) == Outcome::kIdle);
    file.remove(0);
    CHECK(inode(path) == before);
    CHECK_FALSE(exists(temporary_of(path)));
  }
  CHECK(read_file(file_path) == "the user's\n");
  CHECK(read_file(target) == "the user's\n");
  CHECK_FALSE(exists(dir / "nowhere"));
}

TEST_CASE("rewritten file: replaced or removed by someone else, it is left so") {
  TempDir dir;
  const std::string path = dir / "m.prom";
  std::string why;
  {
    RewrittenFile file(path);
    REQUIRE(file.write("ours\n", &why) == Outcome::kWritten);
    write_text(dir / "theirs", "theirs\n");
    REQUIRE(rename((dir / "theirs").c_str(), path.c_str()) == 0);
    CHECK(file.write("ours again\n", &why) == Outcome::kStopped);
    CHECK(why == path + " was replaced by another file: it is left as it is");
    file.remove(0);
    CHECK(read_file(path) == "theirs\n");
    CHECK_FALSE(exists(temporary_of(path)));
  }
  REQUIRE(unlink(path.c_str()) == 0);
  {
    RewrittenFile file(path);
    REQUIRE(file.write("ours\n", &why) == Outcome::kWritten);
    REQUIRE(unlink(path.c_str()) == 0);
    CHECK(file.write("ours again\n", &why) == Outcome::kStopped);
    CHECK(why == path + " was removed");
    CHECK_FALSE(exists(path));
    CHECK_FALSE(exists(temporary_of(path)));
  }
  {
    RewrittenFile file(path);  // replaced after the last write: remove() leaves it
    REQUIRE(file.write("ours\n", &why) == Outcome::kWritten);
    write_text(dir / "theirs", "theirs\n");
    REQUIRE(rename((dir / "theirs").c_str(), path.c_str()) == 0);
    file.remove(0);
    CHECK(read_file(path) == "theirs\n");
  }
}

TEST_CASE("rewritten file: nothing in /dev, /dev/shm allowed") {
  const std::string in_dev = "/dev/cudapool-unit-test-" + std::to_string(getpid()) + ".prom";
  REQUIRE_FALSE(exists(in_dev));
  RewrittenFile file(in_dev);
  std::string why;
  CHECK(file.write("metrics\n", &why) == Outcome::kStopped);
  CHECK(why == in_dev + ": nothing is created in /dev");
  CHECK_FALSE(exists(in_dev));
  CHECK_FALSE(exists(temporary_of(in_dev)));
  if (exists(in_dev)) unlink(in_dev.c_str());  // a broken build's: not left in /dev
  struct stat shm;
  if (stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) && access("/dev/shm", W_OK) == 0) {
    const std::string path = "/dev/shm/cudapool-unit-test-" + std::to_string(getpid()) + ".prom";
    RewrittenFile in_shm(path);
    CHECK(in_shm.write("metrics\n", &why) == Outcome::kWritten);
    CHECK(read_file(path) == "metrics\n");
    in_shm.remove(0);
    CHECK_FALSE(exists(path));
  }
}

TEST_CASE("rewritten file: no write after remove(), also from another thread") {
  TempDir dir;
  for (int round = 0; round < 200; ++round) {
    const std::string path = dir / ("m" + std::to_string(round) + ".prom");
    RewrittenFile file(path);
    std::atomic<bool> started{false};
    std::thread writer([&] {
      std::string why;
      for (int i = 0; i < 1000; ++i) {
        if (file.write("metrics\n", &why) == Outcome::kIdle) break;
        started.store(true);
      }
    });
    while (!started.load()) std::this_thread::yield();
    file.remove(1000);
    writer.join();
    INFO("round " << round);
    CHECK_FALSE(exists(path));
    CHECK_FALSE(exists(temporary_of(path)));
  }
}
