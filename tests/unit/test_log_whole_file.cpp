// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_whole_file.cpp: a file written whole or not at all (log/whole_file.h, the
// OOM snapshot's): the content at PATH with mode 0600 and no temporary left; an existing regular
// file replaced; a directory, a symbolic link (dangling or not) and a FIFO left as they are, with
// a reason; a missing directory, a read-only one (not as root) and a write cut short (a file size
// limit, as a full disk cuts it) give a reason and leave nothing, an earlier file as it was. Not
// here: the shim's use of it (tests/fakecuda/oom_snapshot.sh).
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "log/whole_file.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::write_whole_file;
using logtest::exists;
using logtest::read_file;
using logtest::TempDir;
using logtest::temporary_of;

TEST_CASE("whole_file: written with mode 0600, then replaced whole", "[log][whole_file]") {
  TempDir dir;
  const std::string path = dir / "snap.pickle";
  const mode_t old = umask(022);
  CHECK(write_whole_file(path, "first").empty());
  umask(old);
  CHECK(read_file(path) == "first");
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(!exists(temporary_of(path)));
  CHECK(write_whole_file(path, "second, longer").empty());
  CHECK(read_file(path) == "second, longer");
}

TEST_CASE("whole_file: never over what is not a regular file", "[log][whole_file]") {
  TempDir dir;
  const std::string sub = dir / "sub";
  REQUIRE(mkdir(sub.c_str(), 0700) == 0);
  CHECK(write_whole_file(sub, "x").find("not a regular file") != std::string::npos);
  CHECK(write_whole_file(sub + "/", "x").find("directory") != std::string::npos);
  const std::string target = dir / "target";
  const std::string link = dir / "link";
  REQUIRE(symlink(target.c_str(), link.c_str()) == 0);  // dangling
  CHECK(write_whole_file(link, "x").find("not a regular file") != std::string::npos);
  CHECK(!exists(target));
  const std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(write_whole_file(fifo, "x").find("not a regular file") != std::string::npos);
  CHECK(!exists(temporary_of(link)));
  CHECK(!exists(temporary_of(fifo)));
}

TEST_CASE("whole_file: a missing or read-only directory leaves nothing", "[log][whole_file]") {
  TempDir dir;
  const std::string missing = dir / "no/such/dir/snap.pickle";
  const std::string why = write_whole_file(missing, "x");
  CHECK(why.find("cannot create") != std::string::npos);
  CHECK(why.find(missing) != std::string::npos);
  const std::string ro = dir / "ro";
  REQUIRE(mkdir(ro.c_str(), 0500) == 0);
  if (access(ro.c_str(), W_OK) == 0) return;  // root: a read-only directory is writable
  CHECK(!write_whole_file(ro + "/snap.pickle", "x").empty());
  CHECK(!exists(ro + "/snap.pickle"));
}

TEST_CASE("whole_file: a write cut short leaves the earlier file", "[log][whole_file]") {
  TempDir dir;
  const std::string path = dir / "snap.pickle";
  REQUIRE(write_whole_file(path, "earlier").empty());
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  rlimit small = old;
  small.rlim_cur = 4096;  // as a full disk: the write fails part way (EFBIG, no SIGXFSZ)
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string why = write_whole_file(path, std::string(100000, 'x'));
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  CHECK(why.find("cannot write") != std::string::npos);
  CHECK(read_file(path) == "earlier");
  CHECK(!exists(temporary_of(path)));
}
