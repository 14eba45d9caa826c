// SPDX-License-Identifier: Apache-2.0
// shim/recording/loaded_modules.h: the objects loaded in the process (the executable and every
// shared library) with their address ranges, read at exit for the summary line's `modules` when
// CUDAPOOL_BACKTRACE recorded return addresses: a reader turns any frame of the log into
// library+offset (docs/log-format.md, "The summary line"). Not here: symbol names (dladdr, for the
// leaks, in event_log.cpp); never called on the hot path or from a signal handler.
#pragma once

#include <vector>

#include "log/format.h"

namespace cudapool::shim {

// At most log::kMaxModules, sorted by base address.
std::vector<log::Module> loaded_modules();

}  // namespace cudapool::shim
