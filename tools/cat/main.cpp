// SPDX-License-Identifier: Apache-2.0
// tools/cat/main.cpp: cudapool-cat, a log as plain text on stdout, whatever it came in: plain,
// gzip or zstd (recognised by its first bytes, log/read/input.h), from a file or stdin. The
// Python tools (report, report --html, export) read compressed logs through it
// (scripts/cudapool_analysis/decoded.py), so that one decoder, with one set of messages, serves
// every reader of the log; a user may pipe it into anything. Usage: see kCommand (--help, --version
// and usage errors as every tool's: tools/cli_common.h). Not here: what a
// line means (nothing here reads lines).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "log/read/input.h"
#include "tools/cli_common.h"

namespace {

const cudapool::cli::Command kCommand = {
    "cudapool-cat", "usage: cudapool-cat [--quiet] [--name NAME] LOG",
    "  Writes LOG (a file, or - for stdin), a cudapool.log/1 file plain or compressed (gzip,\n"
    "  zstd: recognised by their first bytes), to stdout as plain text.\n"
    "  --name NAME  the name messages give LOG (default: LOG; <stdin> for -)\n"
    "  --quiet      no progress line (drawn on stderr only when it is a terminal)\n"
    "  --help, --version  this text; the version\n"
    "  Exit status: 0 written (a compressed LOG that ends in the middle of a frame, as a killed\n"
    "  process leaves it, is written to the cut, with a note on stderr); 1 LOG cannot be read\n"
    "  (missing, a directory, xz or bzip2, corrupt compressed data: the message gives the byte)\n"
    "  or stdout cannot be written; 2 a usage error. docs/log-format.md, \"Compressed logs\"\n"};

// Writes it all; false (errno set) when stdout cannot take it.
bool write_all(const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(1, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  cudapool::log::InputOptions options;
  options.progress = true;
  std::string path;
  bool path_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    int status = 0;
    if (cudapool::cli::standard_option(kCommand, arg, &status)) return status;
    if (arg == "--quiet") {
      options.progress = false;
    } else if (arg == "--name") {
      if (i + 1 >= argc) return cudapool::cli::usage_error(kCommand, "--name needs a value");
      options.name = argv[++i];
    } else if (arg != "-" && arg.size() > 1 && arg[0] == '-') {
      return cudapool::cli::usage_error(kCommand, "unknown option " + arg);
    } else if (!path_given) {
      path = arg;
      path_given = true;
    } else {
      return cudapool::cli::usage_error(kCommand, "one LOG only");
    }
  }
  if (!path_given || path.empty()) return cudapool::cli::usage_error(kCommand, "no LOG given");
  cudapool::log::LogInput input;
  std::string error;
  if (!input.open(path, &error, options)) {
    std::fprintf(stderr, "cudapool-cat: %s\n", error.c_str());
    return 1;
  }
  std::vector<char> buffer(std::size_t{1} << 20);
  std::istream& in = input.stream();
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    if (!write_all(buffer.data(), got)) {
      if (errno == EPIPE) return 0;  // the reader stopped reading: not an error of the log
      std::fprintf(stderr, "cudapool-cat: cannot write to stdout: %s\n", std::strerror(errno));
      return 1;
    }
  }
  if (!input.error().empty()) {
    std::fprintf(stderr, "cudapool-cat: %s\n", input.error().c_str());
    return 1;
  }
  if (!input.ended_early().empty()) {
    std::fprintf(stderr, "cudapool-cat: note: %s\n", input.ended_early().c_str());
  }
  return 0;
}
