// SPDX-License-Identifier: Apache-2.0
// shim/reports/exit_report.h: what the shim reports when the process exits (normal exit, exit()
// from any thread, end of main): the CUDAPOOL_SUMMARY table (torch.cuda.memory_summary() layout per
// pool) with its leak report, and the log's summary line, both made from one exit_snapshot()
// (exit_snapshot.h). It makes no CUDA call (the driver may already be shutting down) and runs
// once. Not here: when it runs (lifecycle/startup.cpp registers it with atexit when something is to
// be reported, and skips it in a child after fork), the log's file (recording/event_log.h), the
// ends without atexit (support/exit_signals.h, lifecycle/immediate_exit.cpp).
#pragma once

namespace cudapool::shim {

// The report; a second call does nothing.
void run_exit_report();

}  // namespace cudapool::shim
