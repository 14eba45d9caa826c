// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_path.cpp: the log path template (log/path_template.h) with an injected
// environment, each template error, and the safe file creation (log/file.h): mode 0600, an
// existing file never overwritten (NAME.1, NAME.2 ...), a symbolic link never followed, the
// NAME.99 limit, uncreatable paths, a name that is a directory, and the same verdicts found without
// creating anything (check_log_file).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "log/file.h"
#include "log/json_text.h"
#include "log/logger.h"
#include "log/path_template.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::create_log_file;
using cudapool::log::CreatedFile;
using cudapool::log::EnvLookup;
using cudapool::log::expand_path_template;
using cudapool::log::ExpandedPath;
using cudapool::log::log_file_globs;
using cudapool::log::path_template_glob;
using cudapool::log::rank_from_env;

namespace {

using logtest::env_of;
using logtest::read_file;
using logtest::TempDir;

std::string expand(const std::string& tmpl, std::map<std::string, std::string> vars = {}) {
  const ExpandedPath e = expand_path_template(tmpl, env_of(std::move(vars)), 4242, "node7");
  INFO(tmpl << ": " << e.error);
  REQUIRE(e.ok());
  return e.path;
}

std::string expand_error(const std::string& tmpl) {
  const ExpandedPath e = expand_path_template(tmpl, env_of({}), 4242, "node7");
  REQUIRE(!e.ok());
  CHECK(e.path.empty());
  return e.error;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Writes through a created file's descriptor and closes it.
void write_and_close(const CreatedFile& f, const std::string& text) {
  REQUIRE(f.fd >= 0);
  REQUIRE(write(f.fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(f.fd);
}

}  // namespace

TEST_CASE("log path: %p %r %h %% and plain text") {
  CHECK(expand("/tmp/cudapool.log") == "/tmp/cudapool.log");
  CHECK(expand("log-%p.jsonl") == "log-4242.jsonl");
  CHECK(expand("%h/%p-%r") == "node7/4242-0");
  CHECK(expand("100%%-%p%%") == "100%-4242%");
  CHECK(expand("%%p") == "%p");
  CHECK(expand("r%r", {{"RANK", "3"}}) == "r3");
}

TEST_CASE("log path: the rank comes from RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, else 0") {
  CHECK(rank_from_env(env_of({})) == "0");
  CHECK(rank_from_env(nullptr) == "0");
  CHECK(rank_from_env(env_of({{"SLURM_PROCID", "5"}})) == "5");
  CHECK(rank_from_env(env_of({{"SLURM_PROCID", "5"}, {"OMPI_COMM_WORLD_RANK", "6"}})) == "6");
  CHECK(rank_from_env(
            env_of({{"SLURM_PROCID", "5"}, {"OMPI_COMM_WORLD_RANK", "6"}, {"RANK", "7"}})) == "7");
  // An empty value counts as unset.
  CHECK(rank_from_env(env_of({{"RANK", ""}, {"SLURM_PROCID", "5"}})) == "5");
  // A host name never adds a directory.
  const ExpandedPath host = expand_path_template("%h.log", env_of({}), 1, "a/b");
  CHECK(host.path == "a_b.log");
}

TEST_CASE("log path: a rank of anything but letters, digits, '_' and '-' is an error naming it") {
  CHECK(expand("logs/%r/run.jsonl", {{"RANK", "12"}}) == "logs/12/run.jsonl");
  CHECK(expand("r%r", {{"SLURM_PROCID", "job_7-b"}}) == "rjob_7-b");
  // Before, logs/%r/run.jsonl with RANK=.. was logs/../run.jsonl: outside logs/.
  for (const char* bad : {"..", ".", "../x", "a/b", "1 2", "x\n", "r.1"}) {
    const ExpandedPath e =
        expand_path_template("logs/%r/run.jsonl", env_of({{"RANK", bad}}), 1, "node7");
    INFO(bad);
    CHECK(!e.ok());
    CHECK(e.path.empty());
    CHECK(e.error == "RANK " + cudapool::log::json_string(bad) +
                         " is not a rank for %r (letters, digits, '_' and '-' only)");
  }
  const ExpandedPath ompi =
      expand_path_template("%r", env_of({{"OMPI_COMM_WORLD_RANK", ".."}}), 1, "node7");
  CHECK(ompi.error.rfind("OMPI_COMM_WORLD_RANK \"..\" is not a rank", 0) == 0);
  // No rank set: 0, as before.
  CHECK(expand("logs/%r/run.jsonl") == "logs/0/run.jsonl");
  // A host name that would climb: an error too.
  CHECK(expand_path_template("logs/%h/x", env_of({}), 1, "..").error ==
        "the host name \"..\" cannot be a part of a path (%h)");
}

TEST_CASE("log path: unknown conversions, a trailing % and empty templates are errors") {
  CHECK(expand_error("log-%x") == "unknown %x at offset 4 (known: %p %r %h %%)");
  CHECK(expand_error("%P").find("unknown %P at offset 0") == 0);
  CHECK(expand_error("%d.log").find("unknown %d") == 0);
  CHECK(expand_error("a%").find("a lone % at the end") == 0);
  CHECK(expand_error("%").find("a lone % at the end") == 0);
  CHECK(expand_error("%%%").find("a lone % at the end") == 0);
  CHECK(expand_error(std::string("x%\x01")).find("unknown % followed by byte 0x01") == 0);
  CHECK(expand_error("") == "empty log path");
  const ExpandedPath empty_host = expand_path_template("%h", env_of({}), 1, "");
  CHECK(!empty_host.ok());
}

TEST_CASE("log path: the glob of every name a template expands to, its own bytes escaped") {
  CHECK(path_template_glob("/tmp/run-%p-%r-%h.jsonl").path == "/tmp/run-*-*-*.jsonl");
  CHECK(path_template_glob("100%%-%p%%").path == "100%-*%");
  CHECK(path_template_glob("%%p").path == "%p");
  CHECK(path_template_glob("a b*?[x]\\$(y)\n'\"").path == "a b\\*\\?\\[x]\\\\$(y)\n'\"");
  // the template's own errors, as the expansion gives them; none that depend on the environment
  CHECK(path_template_glob("log-%x").error == expand_error("log-%x"));
  CHECK(path_template_glob("a%").error == expand_error("a%"));
  CHECK(path_template_glob("").error == "empty log path");
  CHECK(path_template_glob("x%r").ok());
}

TEST_CASE("log path: log_file_globs names the numbered and the uncompressed names too") {
  std::string error = "stale";
  CHECK(log_file_globs("run-%p.jsonl", &error) ==
        std::vector<std::string>{"run-*.jsonl", "run-*.jsonl.[1-9]", "run-*.jsonl.[1-9][0-9]"});
  CHECK(error.empty());
  CHECK(log_file_globs("r.jsonl.zst", &error) ==
        std::vector<std::string>{"r.jsonl.zst", "r.jsonl.zst.[1-9]", "r.jsonl.zst.[1-9][0-9]",
                                 "r.jsonl", "r.jsonl.[1-9]", "r.jsonl.[1-9][0-9]"});
  CHECK(log_file_globs("r-%q", &error).empty());
  CHECK(error == "log path \"r-%q\": unknown %q at offset 2 (known: %p %r %h %%): no log");
}

TEST_CASE("log file: created new with mode 0600") {
  TempDir dir;
  const mode_t old = umask(022);
  const CreatedFile f = create_log_file(dir / "a.log");
  umask(old);
  REQUIRE(f.fd >= 0);
  CHECK(f.path == dir / "a.log");
  CHECK(f.error.empty());
  CHECK(f.note.empty());
  CHECK((fcntl(f.fd, F_GETFD) & FD_CLOEXEC) != 0);
  struct stat st;
  REQUIRE(fstat(f.fd, &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(S_ISREG(st.st_mode));
  write_and_close(f, "x\n");
  CHECK(read_file(dir / "a.log") == "x\n");
}

TEST_CASE("log file: an existing file is never overwritten: NAME.1, NAME.2") {
  TempDir dir;
  write_file(dir / "a.log", "old contents\n");
  const CreatedFile f1 = create_log_file(dir / "a.log");
  REQUIRE(f1.fd >= 0);
  CHECK(f1.path == dir / "a.log.1");
  CHECK(f1.note ==
        "log " + (dir / "a.log") + " exists: writing to " + (dir / "a.log.1") + " instead");
  write_and_close(f1, "new\n");
  const CreatedFile f2 = create_log_file(dir / "a.log");
  REQUIRE(f2.fd >= 0);
  CHECK(f2.path == dir / "a.log.2");
  close(f2.fd);
  CHECK(read_file(dir / "a.log") == "old contents\n");
  CHECK(read_file(dir / "a.log.1") == "new\n");
}

TEST_CASE("log file: a name that is a directory is an error, and nothing is made") {
  TempDir dir;
  REQUIRE(mkdir((dir / "d").c_str(), 0700) == 0);
  REQUIRE(symlink((dir / "d").c_str(), (dir / "to-d").c_str()) == 0);
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(chdir(dir.path.c_str()) == 0);
  // Before, "." made "..1", "./" made "./.1", "/" made "/.1" and an existing directory NAME.1.
  for (const std::string& name :
       {std::string("."), std::string("./"), std::string(".."), std::string("d"), std::string("d/"),
        std::string("d/."), std::string("d/.."), dir / "d", dir / "to-d", std::string("/"),
        std::string("no-such-dir/")}) {
    INFO(name);
    const CreatedFile f = create_log_file(name, "header\n");
    CHECK(f.fd == -1);
    CHECK(f.error == "log " + name + ": a directory, not a file name");
    CHECK(cudapool::log::check_log_file(name) == f.error);
    CHECK(create_log_file(name, "x", cudapool::log::FileKind::kSummary).error ==
          "summary " + name + ": a directory, not a file name");
  }
  REQUIRE(chdir(cwd) == 0);
  for (const char* made : {"..1", "d.1", "to-d.1", "d/.1", "d/..1"}) {
    INFO(made);
    CHECK(!exists(dir / made));
  }
}

TEST_CASE("log file: check_log_file says what create_log_file would, and makes nothing") {
  TempDir dir;
  write_file(dir / "file", "");
  write_file(dir / "taken", "old\n");
  for (const std::string& name :
       {dir / "a.log", dir / "taken", dir / "no/such/dir/a.log", dir / "file/a.log",
        std::string("/dev/cudapool-no-such-name"), std::string("/dev/null"), std::string("")}) {
    INFO(name);
    const std::string said = cudapool::log::check_log_file(name);
    CHECK(!exists(name + ".1"));
    const CreatedFile f = create_log_file(name);
    CHECK(said == f.error);
    if (f.fd >= 0) close(f.fd);
  }
  CHECK(read_file(dir / "taken") == "old\n");
}

TEST_CASE("log file: a symbolic link at the name is not followed: NAME.1, the target untouched") {
  TempDir dir;
  write_file(dir / "victim", "precious\n");
  REQUIRE(symlink((dir / "victim").c_str(), (dir / "a.log").c_str()) == 0);
  const CreatedFile f = create_log_file(dir / "a.log");
  REQUIRE(f.fd >= 0);
  CHECK(f.path == dir / "a.log.1");
  CHECK(!f.note.empty());
  write_and_close(f, "log\n");
  CHECK(read_file(dir / "victim") == "precious\n");
  struct stat st;
  REQUIRE(lstat((dir / "a.log.1").c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));

  // A dangling link: its target is not created.
  REQUIRE(symlink((dir / "nowhere").c_str(), (dir / "b.log").c_str()) == 0);
  const CreatedFile g = create_log_file(dir / "b.log");
  REQUIRE(g.fd >= 0);
  CHECK(g.path == dir / "b.log.1");
  close(g.fd);
  CHECK(!exists(dir / "nowhere"));
}

TEST_CASE("log file: NAME to NAME.99 taken is an error") {
  TempDir dir;
  write_file(dir / "a.log", "");
  for (int i = 1; i <= 99; ++i) write_file(dir / ("a.log." + std::to_string(i)), "");
  const CreatedFile f = create_log_file(dir / "a.log");
  CHECK(f.fd == -1);
  CHECK(f.error == "log " + (dir / "a.log") + ": " + (dir / "a.log") + " and " + (dir / "a.log") +
                       ".1 to " + (dir / "a.log") + ".99 all exist");
  CHECK(!exists(dir / "a.log.100"));
}

TEST_CASE("log file: a path that cannot be created is an error naming it") {
  TempDir dir;
  const CreatedFile missing = create_log_file(dir / "no/such/dir/a.log");
  CHECK(missing.fd == -1);
  CHECK(missing.error ==
        "log " + (dir / "no/such/dir/a.log") + ": cannot create (No such file or directory)");
  write_file(dir / "file", "");
  const CreatedFile under_file = create_log_file(dir / "file/a.log");
  CHECK(under_file.fd == -1);
  CHECK(under_file.error.find("Not a directory") != std::string::npos);
  CHECK(create_log_file("").fd == -1);
  if (geteuid() != 0) {  // root writes anywhere
    REQUIRE(mkdir((dir / "ro").c_str(), 0500) == 0);
    const CreatedFile ro = create_log_file(dir / "ro/a.log");
    CHECK(ro.fd == -1);
    CHECK(ro.error.find("Permission denied") != std::string::npos);
  }
}
