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

int check_log_template_command(int argc, char** argv) {
  const auto usage = [](const std::string& why) {
    return cudapool::cli::usage_error(kConfigCommand, why);
  };
  if (argc < 1) return usage("--log-template needs a value");
  const std::string path_template = argv[0];
  // %p: the process that will start the log (`cudapool run` execs it, keeping its own pid).
  std::uint64_t pid = static_cast<std::uint64_t>(getpid());
  if (argc == 3 && std::string_view(argv[1]) == "--pid") {
    char* end = nullptr;
    pid = std::strtoull(argv[2], &end, 10);
    if (argv[2][0] == '\0' || *end != '\0') return usage(std::string("not a pid: ") + argv[2]);
  } else if (argc != 1) {
    return usage("unexpected arguments after the template");
  }
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
