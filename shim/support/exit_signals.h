// SPDX-License-Identifier: Apache-2.0
// shim/support/exit_signals.h: what the shim does when the process ends without its atexit
// handlers: killed by a signal whose default action ends it (SIGHUP, SIGINT, SIGQUIT, SIGTERM),
// ended by _exit/_Exit (immediate_exit.cpp), or replaced by an exec (exec_hooks.cpp). The log's
// writer thread would die with everything still queued in the ring, and the control socket and
// the metrics file would stay behind. Each of those registers an end action here (the log's wait
// until every queued event is in the file; the control endpoint's removal of its files, with its
// undo for an exec that failed). The first registration installs the shim's handler for each of
// those signals the program left at its default action: the handler runs the end actions, then
// ends the process by the same signal, as the default action would have (same exit status, a
// core for SIGQUIT). Not here: a summary line or CUDAPOOL_SUMMARY (they need the pools' locks,
// which the interrupted thread may hold: the log ends without a summary line, as a killed
// process's does), signals the program handles or ignores (left alone; a handler the program
// installs later replaces the shim's), crash signals, the actions themselves
// (recording/event_log.h, control/control.h). In support/, below the rooms that register (it
// depends on nothing of the shim); lifecycle/immediate_exit.cpp and exec_hooks.cpp run them.
#pragma once

namespace cudapool::shim {

// Adds an end action (at most four; in the order added) and installs the handler for each of those
// signals whose disposition is still the default (once). `before_end` runs at a handled signal, in
// _exit and before an exec; `after_failed_exec` (may be null) when an exec returned. Both must be
// async-signal-safe, and do nothing in another process than the one that registered them (a fork
// or vfork child).
void add_end_action(void (*before_end)(), void (*after_failed_exec)() = nullptr);

// The end actions' before_end, in order (from _exit, before an exec). Async-signal-safe.
void run_end_actions();

// Their after_failed_exec, in order (an exec returned). Async-signal-safe.
void run_after_failed_exec();

}  // namespace cudapool::shim
