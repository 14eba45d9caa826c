// SPDX-License-Identifier: Apache-2.0
// shim/reports/oom_snapshot.h: CUDAPOOL_OOM_SNAPSHOT=PATH: at the first out-of-memory the shim
// answers, a memory_viz snapshot of every pool (oom_snapshot_pickle.h: PyTorch 2.11's schema, the
// failed request as an "oom" trace entry) written to PATH, a template like CUDAPOOL_LOG's (%p the
// process id, %r the rank, %h the host, %%), so that the processes of a job (and a program run
// again under another pid) each keep theirs. Once per process: a later out-of-memory writes
// nothing (a fork child passes every call through, so it never writes the parent's file). The
// pools are copied under their locks, then the pickle is made and written with no lock held, whole
// or not at all (log/whole_file.h: a temporary renamed over PATH, mode 0600; never over a
// directory, link, FIFO or device; nothing in /dev). Then one line names the file and how to open
// it; a file that cannot be written gives one warning instead. The out-of-memory answer itself is
// the caller's and is never changed. Called from the allocation hook after the pool's lock is
// released. Not here: the pickle's content (oom_snapshot_pickle.h), the explanation on stderr
// (recording/oom_report.h).
#pragma once

#include "pool/oom.h"

namespace cudapool::shim {

// oom: the failing pool's last_oom(); device: its device. Does nothing without
// CUDAPOOL_OOM_SNAPSHOT, and after the first call.
void write_oom_snapshot(const pool::OomState& oom, int device);

}  // namespace cudapool::shim
