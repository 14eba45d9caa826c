// SPDX-License-Identifier: Apache-2.0
// tools/config/log_template.h: `cudapool-config --log-template TEMPLATE [--pid PID]`, what
// `cudapool run` asks before it starts the program: the shim's own expansion of a CUDAPOOL_LOG
// template and its own rules for the destination (log/logger.h's check_log_template: nothing
// created or opened), so the launcher says what the shim would without a copy of those rules. Not
// here: the conf string (main.cpp).
#pragma once

#include "tools/cli_common.h"

// cudapool config's name and one-line usage (both forms), for main.cpp and the template's usage
// errors.
inline const cudapool::cli::Command kConfigCommand = {
    "cudapool config",
    "usage: cudapool config [STRING] | cudapool config --log-template TEMPLATE [--pid PID]", ""};

// args: what follows --log-template. Prints the path the log would go to on stdout; the shim's
// warning, if it would give one, on stderr ("cudapool: ..."). Returns the exit status: 0 a log
// would be opened, 1 the shim would warn and open none, 2 usage error.
int check_log_template_command(int argc, char** argv);
