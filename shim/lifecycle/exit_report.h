// shim/lifecycle/exit_report.h: what the shim reports when the process exits (normal exit, exit()
// from any thread, end of main): the CUDAPOOL_SUMMARY table (torch.cuda.memory_summary() layout per
// pool) with its leak report, and the log's summary line. It makes no CUDA call (the driver may
// already be shutting down) and runs once.
#pragma once

namespace cudapool::shim {

// Registers the at-exit report (once); called at initialization when reporting is on.
void register_exit_report();

// The report itself (also for tests); a second call does nothing.
void run_exit_report();

}  // namespace cudapool::shim
