// SPDX-License-Identifier: Apache-2.0
// tools/config/main.cpp: cudapool-config, which shows the allocator settings a conf string puts
// in force and everything wrong with it. Parsing is config/'s; this file only chooses the
// string, formats, prints and picks the exit status (0 clean, 1 diagnostics, 2 usage error).
// --log-template checks a CUDAPOOL_LOG template instead (log_template.h); --launch-check and
// --log-files answer `cudapool run` in key=value lines (launch_check.h). --help, --version and
// usage errors as every tool's (tools/cli_common.h).
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "config/describe.h"
#include "config/environment.h"
#include "config/keys.h"
#include "config/parse.h"
#include "config/terminal_text.h"
#include "tools/cli_common.h"
#include "tools/config/launch_check.h"
#include "tools/config/log_template.h"

namespace {

namespace cfg = cudapool::config;

void print_usage(std::ostream& out) {
  out << kConfigCommand.usage
      << "\n"
         "\n"
         "Shows the settings a PYTORCH_CUDA_ALLOC_CONF-style STRING puts in force. Without\n"
         "STRING it reads the first variable set of";
  for (const char* variable : cfg::kConfVariables) out << ' ' << variable;
  out << ".\n"
         "Exit status: 0 no problems, 1 problems found (listed on stderr), 2 usage error.\n"
         "--help, --version: this text; the version.\n"
         "With --log-template: the file a CUDAPOOL_LOG template names for process PID (default:\n"
         "this one), and the shim's warning when it would open no log there (exit status 1).\n"
         "For scripts (cudapool run), lines of key=value (names escaped to one line):\n"
         "--launch-check [--pid PID]: what the shim would make of this environment at its\n"
         "first CUDA call: strict=0|1, errors=N (the conf's diagnostics), refuse=0|1 (strict\n"
         "with errors: it would not start), conf_from=VARIABLE (empty: none set) and, with\n"
         "CUDAPOOL_LOG set, log=PATH (expanded for PID) and log_ok=0|1. The shim's messages\n"
         "on stderr (the log's only when it would start); exit status 1 when it would say any.\n"
         "--log-files TEMPLATE: the files there are now that the template can name for any\n"
         "pid, rank and host (NAME.1 ... and a .zst or .gz log's plain name too): file=NAME\n"
         "for a regular file, stream=NAME for a device or FIFO the log is written to as it is.\n"
         "\n"
         "keys (key:value pairs separated by ','):\n";
  for (const cfg::KeyInfo& key : cfg::key_table()) {
    out << "  " << key.name;
    if (!key.alias.empty()) out << " (or " << key.alias << ")";
    out << ": " << key.accepted << "; default " << key.default_text;
    if (key.pytorch_only) out << " (PyTorch-only, ignored)";
    out << '\n';
  }
}

// The string on one line, in quotes: quotes, backslashes, control characters and bytes that are
// not UTF-8 escaped (config/terminal_text.h).
std::string quoted(std::string_view text) {
  return "\"" + cfg::escape_for_terminal(text, '"') + "\"";
}

std::string padded(const std::string& text, std::size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help")) {
    print_usage(std::cout);
    return 0;
  }
  if (argc >= 2 && std::string_view(argv[1]) == "--version") {
    std::cout << cudapool::cli::kVersionLine;
    return 0;
  }
  if (argc >= 2 && std::string_view(argv[1]) == "--log-template") {
    return check_log_template_command(argc - 2, argv + 2);
  }
  if (argc >= 2 && std::string_view(argv[1]) == "--launch-check") {
    return launch_check_command(argc - 2, argv + 2);
  }
  if (argc >= 2 && std::string_view(argv[1]) == "--log-files") {
    return log_files_command(argc - 2, argv + 2);
  }
  if (argc > 2) {
    return cudapool::cli::usage_error(kConfigCommand,
                                      "expected at most one argument (quote the conf string)");
  }
  std::string conf;
  std::string source;  // "argument", a variable name, or "" when nothing is set
  if (argc == 2) {
    const std::string_view arg = argv[1];
    if (arg.size() > 1 && arg.front() == '-') {
      return cudapool::cli::usage_error(kConfigCommand, "unknown option " + std::string(arg));
    }
    conf = arg;
    source = "argument";
  } else {
    cfg::ConfSource selected = cfg::select_conf([](const char* name) { return std::getenv(name); });
    conf = std::move(selected.conf);
    source = std::move(selected.variable);
  }

  const cfg::ParseResult result = cfg::parse_conf(conf);
  std::cout << "conf: " << quoted(conf) << " (from " << (source.empty() ? "nothing set" : source)
            << ")\n";

  const std::vector<cfg::EffectiveSetting> settings = cfg::describe(result);
  std::size_t name_width = 0;
  std::size_t value_width = 0;
  for (const cfg::EffectiveSetting& s : settings) {
    name_width = std::max(name_width, s.name.size());
    value_width = std::max(value_width, s.value.size());
  }
  for (const cfg::EffectiveSetting& s : settings) {
    const std::string& origin = s.origin == "conf" ? source : s.origin;
    std::cout << padded(s.name, name_width + 2) << padded(s.value, value_width + 2) << origin
              << '\n';
  }
  for (const cfg::Note& note : result.notes) std::cout << note.message() << '\n';
  std::cout.flush();
  for (const cfg::Diagnostic& d : result.diagnostics) std::cerr << d.message() << '\n';
  return result.diagnostics.empty() ? 0 : 1;
}
