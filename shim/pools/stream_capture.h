// SPDX-License-Identifier: Apache-2.0
// shim/pools/stream_capture.h: how many stream captures are in progress in the process. The
// capture hooks count them (hooks_streams.cpp: a successful cuStreamBeginCapture adds one, the end
// of a capture takes it away); while one is, the shim makes no driver call that could invalidate
// it (the backend's cuCtxSynchronize before unmapping pages, the reuse fences' synchronizations,
// records and waits, the event hooks' bookkeeping). Counted whatever reuse_fence is. Not here:
// which stream is captured (the driver knows; the shim only needs to know that one is), the streams
// the fences follow (stream_registry.h).
#pragma once

#include <atomic>

namespace cudapool::shim {

inline std::atomic<int> g_captures_in_progress{0};

inline std::atomic<int>& captures_in_progress() {
  return g_captures_in_progress;
}

}  // namespace cudapool::shim
