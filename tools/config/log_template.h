// SPDX-License-Identifier: Apache-2.0
// tools/config/log_template.h: `cudapool-config --log-template TEMPLATE [--pid PID]`, what
// `cudapool run` asks before it starts the program: the shim's own expansion of a CUDAPOOL_LOG
// template and its own rules for the destination (log/logger.h's check_log_template: nothing
// created or opened), so the launcher says what the shim would without a copy of those rules. Not
// here: the conf string (main.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "tools/cli_common.h"

// cudapool config's name and usage (all its forms), for main.cpp's, the template's and
// launch_check.h's usage errors.
inline const cudapool::cli::Command kConfigCommand = {
    "cudapool config",
    "usage: cudapool config [STRING] | cudapool config --log-template TEMPLATE [--pid PID]\n"
    "       cudapool config --launch-check [--pid PID] | cudapool config --log-files TEMPLATE",
    ""};

// args: what follows `after` (the template, --launch-check): nothing, or "--pid PID" (the process
// %p stands for; without it *pid is left as it is). Returns "" or what is wrong, for a usage error.
std::string pid_arguments(int argc, char** argv, const char* after, std::uint64_t* pid);

// args: what follows --log-template. Prints the path the log would go to on stdout; the shim's
// warning, if it would give one, on stderr ("cudapool: ..."). Returns the exit status: 0 a log
// would be opened, 1 the shim would warn and open none, 2 usage error.
int check_log_template_command(int argc, char** argv);
