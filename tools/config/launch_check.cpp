// SPDX-License-Identifier: Apache-2.0
// tools/config/launch_check.cpp: see launch_check.h.
#include "tools/config/launch_check.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "config/environment.h"
#include "config/parse.h"
#include "config/terminal_text.h"
#include "log/file.h"
#include "log/logger.h"
#include "tools/config/log_template.h"

namespace {

namespace cfg = cudapool::config;

std::string escaped(const std::string& text) {
  return cfg::escape_for_terminal(text, '\0');
}

}  // namespace

int launch_check_command(int argc, char** argv) {
  // %p: the process that will start the log (`cudapool run` passes its own: exec keeps it).
  std::uint64_t pid = static_cast<std::uint64_t>(getpid());
  const std::string why = pid_arguments(argc, argv, "--launch-check", &pid);
  if (!why.empty()) return cudapool::cli::usage_error(kConfigCommand, why);
  const auto env = [](const char* name) { return std::getenv(name); };

  const cfg::ConfSource source = cfg::select_conf(env);
  const cfg::ParseResult result = cfg::parse_conf(source.conf);
  const bool errors = !result.diagnostics.empty();
  const bool refuse = result.options.strict && errors;
  std::cout << "strict=" << (result.options.strict ? 1 : 0) << '\n'
            << "errors=" << result.diagnostics.size() << '\n'
            << "refuse=" << (refuse ? 1 : 0) << '\n'
            << "conf_from=" << source.variable << '\n';

  const char* log_template = std::getenv("CUDAPOOL_LOG");
  const bool logs = log_template != nullptr && log_template[0] != '\0';
  cudapool::log::TemplateCheck log;
  if (logs) {
    log = cudapool::log::check_log_template(log_template, env, pid);
    if (!log.path.empty()) std::cout << "log=" << escaped(log.path) << '\n';
    std::cout << "log_ok=" << (log.warning.empty() ? 1 : 0) << '\n';
  }
  std::cout.flush();

  for (const cfg::Diagnostic& d : result.diagnostics) std::cerr << d.message() << '\n';
  const bool log_warns = logs && !log.warning.empty();
  if (log_warns && !refuse) std::cerr << "cudapool: " << escaped(log.warning) << '\n';
  return errors || log_warns ? cudapool::cli::kExitProblem : cudapool::cli::kExitOk;
}

int log_files_command(int argc, char** argv) {
  if (argc < 1) return cudapool::cli::usage_error(kConfigCommand, "--log-files needs a value");
  if (argc != 1) {
    return cudapool::cli::usage_error(kConfigCommand, "unexpected arguments after the template");
  }
  std::string error;
  const std::vector<std::string> patterns = cudapool::log::log_file_globs(argv[0], &error);
  if (!error.empty()) {
    std::cerr << "cudapool: " << escaped(error) << '\n';
    return cudapool::cli::kExitProblem;
  }
  std::set<std::string> names;  // sorted, each once
  for (const std::string& pattern : patterns) {
    // No GLOB_PERIOD: '*' does not match a name's leading '.' (no "." or ".." either).
    glob_t found{};
    if (glob(pattern.c_str(), 0, nullptr, &found) == 0) {
      for (std::size_t i = 0; i < found.gl_pathc; ++i) names.insert(found.gl_pathv[i]);
    }
    globfree(&found);
  }
  for (const std::string& name : names) {
    struct stat st;
    if (cudapool::log::names_stream(name)) {
      std::cout << "stream=" << escaped(name) << '\n';
    } else if (stat(name.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      std::cout << "file=" << escaped(name) << '\n';
    }
  }
  std::cout.flush();
  return cudapool::cli::kExitOk;
}
