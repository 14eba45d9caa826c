// SPDX-License-Identifier: Apache-2.0
// tools/cli_common.h: what every cudapool command-line tool does alike: --help (its text on stdout,
// exit 0), --version ("cudapool VERSION", the project's version: CUDAPOOL_VERSION, set by
// tools/CMakeLists.txt), and a usage error (on stderr "cudapool COMMAND: what is wrong", then the
// one-line usage; exit 2). Exit statuses: 0 done, 1 a problem (input that cannot be read, settings
// with errors), 2 a usage error. Header-only. Not here: any tool's own options; sizes
// (tools/replay/bytes_arg.h).
#pragma once

#include <cstdio>
#include <string>

#ifndef CUDAPOOL_VERSION
#error "CUDAPOOL_VERSION (the project's version, tools/CMakeLists.txt) is not defined"
#endif

namespace cudapool::cli {

constexpr int kExitOk = 0;
constexpr int kExitProblem = 1;
constexpr int kExitUsage = 2;

// "cudapool 0.1.0": what --version prints, the same for every command and the launcher.
constexpr const char* kVersionLine = "cudapool " CUDAPOOL_VERSION "\n";

struct Command {
  const char* name;   // as its usage errors begin: "cudapool replay"
  const char* usage;  // the one-line usage, "usage: cudapool replay ...", without a newline
  const char* help;   // --help's text after the usage line (each line ending in a newline)
};

// The usage error: "NAME: WHAT", the usage line; returns 2, the status to exit with.
inline int usage_error(const Command& command, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n%s\n", command.name, what.c_str(), command.usage);
  return kExitUsage;
}

// --help / -h and --version: prints on stdout, sets *status (0) and returns true; else false.
inline bool standard_option(const Command& command, const std::string& arg, int* status) {
  if (arg == "-h" || arg == "--help") {
    std::printf("%s\n%s", command.usage, command.help);
  } else if (arg == "--version") {
    std::fputs(kVersionLine, stdout);
  } else {
    return false;
  }
  *status = std::fflush(stdout) == 0 ? kExitOk : kExitProblem;
  return true;
}

}  // namespace cudapool::cli
