// SPDX-License-Identifier: Apache-2.0
// shim/control/request_context.h: what the control endpoint's answers say about the request and
// the endpoint itself (who asked, where the socket and the metrics file are), and the process's
// wall-clock figures they report. Plain data and two clock readings; no pool, no socket. Not
// here: the answers (control_commands.h), the socket (control_socket.h).
#pragma once

#include <cstdint>
#include <string>

namespace cudapool::shim {

struct RequestContext {
  std::uint64_t peer_pid = 0;  // who asked (SO_PEERCRED); 0 for the metrics file
  std::string socket_path;     // "" when CUDAPOOL_CONTROL is not set
  std::string metrics_path;    // "" when CUDAPOOL_METRICS is not set
  int metrics_interval_s = 0;
};

// Seconds since the Unix epoch, now; and when the shim started (its settings' start_ns put on
// the wall clock).
double unix_now_s();
double shim_start_unix_s();

}  // namespace cudapool::shim
