// SPDX-License-Identifier: Apache-2.0
// tools/analyze/main.cpp: cudapool-analyze, the command line of the analysis engine:
//
//   cudapool-analyze [--no-page] [--quiet] [--no-symbols] [--as NAME] [--level LEVEL]
//                    [--perfetto POINTS,INSTANTS | --memory-viz ENTRIES] LOG...
//
// reads each log once (- for stdin, once; plain, gzip or zstd: log/read/input.h) and prints one
// JSON document on stdout
// ("schema": "cudapool.analysis/1", docs/analysis-format.md): per log the report
// (`cudapool report --json`'s object) and the page's data (and with --perfetto, what the Perfetto
// export draws: perfetto_trace.h; with --memory-viz, what the memory_viz export draws:
// memviz_trace.h), then the cross-rank table. Exit
// status: 0; 1 when a log cannot be read (a message on stderr for each, nothing on stdout);
// 2 on a usage error. --as NAME: the name its messages start with (`cudapool report`, which runs it
// for its figures: scripts/cudapool_analysis/engine.py). --no-symbols: native frames are never
// named from the modules' own files (symbolizer.h; on by default where built with libdw).
// --level: the level of reserved bytes whose time above the report gives (held_report.h). Not here:
// the engine (analyze_log.h). --help, --version and usage errors as every tool's
// (tools/cli_common.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "config/terminal_text.h"
#include "log/read/input.h"
#include "tools/analyze/analyze_log.h"
#include "tools/analyze/held_report.h"
#include "tools/analyze/symbolizer.h"
#include "tools/cli_common.h"
#include "tools/replay/recorded_log.h"

namespace {

const cudapool::cli::Command kCommand = {
    "cudapool-analyze",
    "usage: cudapool-analyze [--no-page] [--quiet] [--no-symbols] [--as NAME] [--level LEVEL] "
    "[--perfetto POINTS,INSTANTS | --memory-viz ENTRIES] LOG...",
    "  Reads each cudapool.log/1 file once (plain, gzip or zstd; - for standard input) and\n"
    "  prints one JSON document:\n"
    "  per log the report (what `cudapool report --json` prints) and the HTML page's data\n"
    "  (timelines, segment maps, allocation sites, leaks), then the cross-rank table.\n"
    "  --no-page  the reports and the table only\n"
    "  --quiet    no progress line (drawn on stderr only when it is a terminal)\n"
    "  --no-symbols  name native frames as library + offset, not from the libraries' own\n"
    "             files (their functions and source lines, where the log's build ids match)\n"
    "  --as NAME  begin the messages with NAME (default: cudapool-analyze)\n"
    "  --level LEVEL  the level of reserved bytes whose time above is reported: a fraction\n"
    "             of the peak (0.5, the default: half the peak) or a size (10G)\n"
    "  --perfetto POINTS,INSTANTS  also what `cudapool export --perfetto` draws: counters\n"
    "             downsampled to POINTS (at least 10) a device, INSTANTS instants a device and\n"
    "             action\n"
    "  --memory-viz ENTRIES  also what `cudapool export --memory-viz` draws: the final\n"
    "             segments and blocks, each device's last ENTRIES trace entries (0: all)\n"
    "  --help, --version  this text; the version\n"
    "Exit status: 0; 1 when a log cannot be read; 2 a usage error. docs/analysis-format.md\n"};

// "POINTS,INSTANTS": two unsigned integers, POINTS at least 10.
bool perfetto_limits(const std::string& text, cudapool::analyze::AnalysisOptions* options) {
  const std::size_t comma = text.find(',');
  if (comma == std::string::npos) return false;
  const auto number = [](const std::string& s, std::size_t* v) {
    if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    *v = static_cast<std::size_t>(std::stoull(s));
    return true;
  };
  return number(text.substr(0, comma), &options->perfetto_points) &&
         number(text.substr(comma + 1), &options->perfetto_instants) &&
         options->perfetto_points >= 10;
}

// A usage error with the name the messages begin with (--as).
int usage_error(const std::string& self, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n%s\n", self.c_str(), what.c_str(), kCommand.usage);
  return cudapool::cli::kExitUsage;
}

std::string display_name(const std::string& path) {
  return path == "-" ? "<stdin>" : cudapool::config::escape_for_terminal(path);
}

}  // namespace

int main(int argc, char** argv) {
  // Symbols come from local files only: libdw asks no debuginfod server (symbolizer.h).
  ::unsetenv("DEBUGINFOD_URLS");
  bool page = true;
  bool quiet = false;
  cudapool::analyze::AnalysisOptions options;
  std::string self = "cudapool-analyze";
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--no-page") {
      page = false;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (arg == "--no-symbols") {
      cudapool::analyze::set_symbolizing(false);
    } else if (arg == "--as" && i + 1 < argc) {
      self = argv[++i];
    } else if (arg == "--memory-viz" && i + 1 < argc) {
      const std::string n = argv[++i];
      options.memviz = true;
      if (n.empty() || n.size() > 18 || n.find_first_not_of("0123456789") != std::string::npos) {
        std::fprintf(stderr, "%s: --memory-viz takes ENTRIES (0 or more), not %s\n", self.c_str(),
                     cudapool::config::escape_for_terminal(n).c_str());
        return 2;
      }
      options.memviz_entries = static_cast<std::size_t>(std::stoull(n));
    } else if (arg == "--perfetto" && i + 1 < argc) {
      options.perfetto = true;
      if (!perfetto_limits(argv[++i], &options)) {
        std::fprintf(stderr, "%s: --perfetto takes POINTS,INSTANTS (POINTS at least 10), not %s\n",
                     self.c_str(), cudapool::config::escape_for_terminal(argv[i]).c_str());
        return 2;
      }
    } else if (arg == "--level" && i + 1 < argc) {
      const std::string text = argv[++i];
      if (!cudapool::analyze::parse_level(text, &options.level)) {
        return usage_error(self, "--level: not a level: '" +
                                     cudapool::config::escape_for_terminal(text) +
                                     "': a level is " + cudapool::analyze::kLevelForms);
      }
    } else if (arg == "--as" || arg == "--memory-viz" || arg == "--perfetto" || arg == "--level") {
      return usage_error(self, arg + " needs a value");
    } else if (int status = 0; cudapool::cli::standard_option(kCommand, arg, &status)) {
      return status;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usage_error(self, "unknown option " + cudapool::config::escape_for_terminal(arg));
    } else {
      paths.push_back(arg);
    }
  }
  if (options.perfetto && options.memviz) {
    std::fprintf(stderr, "%s: --perfetto and --memory-viz go one at a time\n", self.c_str());
    return 2;
  }
  if (paths.empty()) return usage_error(self, "no LOG given");
  if (std::count(paths.begin(), paths.end(), std::string("-")) > 1) {
    std::fprintf(stderr, "%s: - (stdin) can be given once\n", self.c_str());
    return 2;
  }
  // Every log is opened before any is read: one that cannot be is said at once.
  std::vector<std::unique_ptr<cudapool::log::LogInput>> files(paths.size());
  bool failed = false;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    files[i] = std::make_unique<cudapool::log::LogInput>();
    cudapool::log::InputOptions input_options;
    input_options.progress = !quiet;
    input_options.name = display_name(paths[i]);
    std::string error;
    if (!files[i]->open(paths[i], &error, input_options)) {
      std::fprintf(stderr, "%s: %s\n", self.c_str(), error.c_str());
      failed = true;
    }
  }
  if (failed) return 1;
  std::ios::sync_with_stdio(false);
  options.sites = page;
  std::vector<std::unique_ptr<cudapool::analyze::LogResult>> results;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const cudapool::log::LogInput& input = *files[i];
    const std::string name = display_name(paths[i]);
    const cudapool::analyze::LogSource source{files[i]->stream(), name, paths[i], i,
                                              [&input] { return input.ended_early(); }};
    std::unique_ptr<cudapool::analyze::LogResult> r;
    try {
      r = cudapool::analyze::analyze_log(source, options);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "%s: out of memory reading %s\n", self.c_str(), name.c_str());
      return 1;
    }
    const std::string read_error = input.error();
    files[i].reset();
    const auto& a = r->analysis;
    if (!read_error.empty()) {  // corrupt compressed data, a read error: its words
      std::fprintf(stderr, "%s: %s\n", self.c_str(), read_error.c_str());
      failed = true;
    } else if (a.lines_ == 0 || !a.holds_a_log()) {
      std::fprintf(stderr, "%s: %s\n", self.c_str(),
                   cudapool::replay::not_a_log(name, a.lines_, a.first_problem_text()).c_str());
      failed = true;
    }
    results.push_back(std::move(r));
  }
  if (failed) return 1;
  std::string doc;
  try {
    doc = cudapool::analyze::analysis_document(results, page);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory writing the document\n", self.c_str());
    return 1;
  }
  std::fwrite(doc.data(), 1, doc.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
