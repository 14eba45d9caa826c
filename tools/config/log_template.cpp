// SPDX-License-Identifier: Apache-2.0
// tools/config/log_template.cpp: see log_template.h.
#include "tools/config/log_template.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "config/terminal_text.h"
#include "log/logger.h"

std::string pid_arguments(int argc, char** argv, const char* after, std::uint64_t* pid) {
  if (argc == 0) return {};
  if (argc == 1 && std::string_view(argv[0]) == "--pid") return "--pid needs a value";
  if (argc == 2 && std::string_view(argv[0]) == "--pid") {
    char* end = nullptr;
    const std::uint64_t value = std::strtoull(argv[1], &end, 10);
    if (argv[1][0] == '\0' || *end != '\0') return std::string("not a pid: ") + argv[1];
    *pid = value;
    return {};
  }
  return std::string("unexpected arguments after ") + after;
}

int check_log_template_command(int argc, char** argv) {
  const auto usage = [](const std::string& why) {
    return cudapool::cli::usage_error(kConfigCommand, why);
  };
  if (argc < 1) return usage("--log-template needs a value");
  const std::string path_template = argv[0];
  // %p: the process that will start the log (`cudapool run` execs it, keeping its own pid).
  std::uint64_t pid = static_cast<std::uint64_t>(getpid());
  const std::string why = pid_arguments(argc - 1, argv + 1, "the template", &pid);
  if (!why.empty()) return usage(why);
  const cudapool::log::TemplateCheck check = cudapool::log::check_log_template(
      path_template, [](const char* name) { return std::getenv(name); }, pid);
  if (!check.path.empty()) {
    std::cout << "log: " << cudapool::config::escape_for_terminal(check.path, '\0') << '\n';
  }
  if (check.warning.empty()) return 0;
  // The shim's words; bytes that would act on a terminal escaped (config/terminal_text.h).
  std::cerr << "cudapool: " << cudapool::config::escape_for_terminal(check.warning, '\0') << '\n';
  return 1;
}
