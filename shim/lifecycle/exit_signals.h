// shim/lifecycle/exit_signals.h: the allocation log when the program is ended by a signal. A signal
// whose default action ends the process (SIGHUP, SIGINT, SIGQUIT, SIGTERM) kills the log's writer
// thread with everything still queued in the ring. While a log is written, the shim handles those
// of them the program left at their default action: the handler waits for the writer to put every
// queued event in the file, then ends the process by the same signal, as the default action would
// have (same exit status, a core for SIGQUIT). Not here: a summary line or CUDAPOOL_SUMMARY (they
// need the pools' locks, which the interrupted thread may hold: the log ends without a summary
// line, as a killed process's does), signals the program handles or ignores (left alone; a handler
// the program installs later replaces the shim's), crash signals, the log itself (the log hands
// its wait over when it starts: recording/event_log.h).
#pragma once

namespace cudapool::shim {

// Installs the handler for each of those signals whose disposition is still the default. Once;
// called when the log starts, with what the handler calls before the signal ends the process:
// `wait_for_log` waits (bounded) until the log's writer has put every queued event in the file.
// It must be async-signal-safe.
void handle_exit_signals_for_log(void (*wait_for_log)());

}  // namespace cudapool::shim
