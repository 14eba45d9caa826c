// SPDX-License-Identifier: Apache-2.0
// shim/control/control.h: the control endpoint's lifecycle. When CUDAPOOL_CONTROL (a socket for
// `cudapool stats/empty-cache/snapshot/top`) or CUDAPOOL_METRICS (a Prometheus textfile) is set,
// start_control, called once from the shim's initialization (lifecycle/startup.cpp), makes the
// socket (control_socket.h) and starts one thread, the control thread, which serves the socket
// and rewrites the metrics file; it registers its own stop at exit, an end action (a handled
// signal, _exit and exec remove the socket and the metrics file; a failed exec has them made
// again: support/exit_signals.h) and a fork handler (a child has no thread, closes the socket's
// descriptors and removes nothing). Without either variable:
// no thread, no socket, no file. Nothing here is on a hook's path. Not here: what is answered
// (control_commands.h), the socket's rules (control_socket.h), the file (metrics_file.h).
#pragma once

namespace cudapool::shim {

// From the shim's initialization, once the settings are read and the shim pools.
void start_control();

// At exit (start_control registers it with atexit): wakes the control thread, waits for it (at
// most 2 s), removes the socket and the metrics file. Nothing in another process (a fork child).
void stop_control();

}  // namespace cudapool::shim
