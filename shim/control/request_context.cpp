// SPDX-License-Identifier: Apache-2.0
// shim/control/request_context.cpp: see request_context.h.
#include "shim/control/request_context.h"

#include <ctime>

#include "shim/support/clock.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

double unix_now_s() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double shim_start_unix_s() {
  const std::uint64_t now = monotonic_ns();
  const std::uint64_t start = reporting().start_ns;
  return unix_now_s() - (now > start ? static_cast<double>(now - start) / 1e9 : 0.0);
}

}  // namespace cudapool::shim
