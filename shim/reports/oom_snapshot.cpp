// SPDX-License-Identifier: Apache-2.0
// shim/reports/oom_snapshot.cpp: see oom_snapshot.h.
#include "shim/reports/oom_snapshot.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "log/path_template.h"
#include "log/whole_file.h"
#include "shim/recording/event_log.h"
#include "shim/reports/oom_snapshot_pickle.h"
#include "shim/reports/pool_readings.h"
#include "shim/support/diagnostics.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

namespace {

std::atomic<bool> g_taken{false};

std::uint64_t wall_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

// The template expanded for this process, or "" after a warning.
std::string snapshot_path() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const log::ExpandedPath expanded = log::expand_path_template(
      reporting().oom_snapshot, [](const char* name) { return std::getenv(name); },
      static_cast<std::uint64_t>(::getpid()), host);
  if (!expanded.ok()) {
    warn("CUDAPOOL_OOM_SNAPSHOT: %s; no snapshot written", expanded.error.c_str());
    return "";
  }
  return expanded.path;
}

// The request that failed, with its frames when the hook recorded them (current_call()).
OomRequest request_of(const pool::OomState& oom, int device) {
  OomRequest r;
  r.device = device;
  r.size = oom.requested;
  r.stream = 0;  // the pool's requests are on the legacy stream (cuMemAlloc_v2)
  r.device_free = oom.device_free_known ? oom.device_free : 0;
  r.time_us = wall_us();
  if (reporting().any()) {
    const CallInfo& call = current_call();
    r.frames.assign(call.backtrace, call.backtrace + call.frames);
    r.python_stack = call.python_stack;
  }
  return r;
}

}  // namespace

namespace {

void write_snapshot(const pool::OomState& oom, int device) {
  const std::string path = snapshot_path();
  if (path.empty()) return;
  const OomRequest request = request_of(oom, device);
  // Each pool is copied under its lock; the rest runs with no lock held.
  const std::vector<PoolBlocks> pools = read_blocks(true);
  std::size_t left_out = 0;
  const std::string data =
      oom_snapshot_pickle(pools, request, conf_record().settings, python_stack_table(), &left_out);
  const std::string why = log::write_whole_file(path, data);
  if (!why.empty()) {
    warn("CUDAPOOL_OOM_SNAPSHOT: %s; no snapshot written", why.c_str());
    return;
  }
  if (left_out != 0) {
    warn("CUDAPOOL_OOM_SNAPSHOT: %zu frames left out of %s (at most %zu are written)", left_out,
         path.c_str(), kMaxSnapshotFrames);
  }
  // At the out-of-memory explanation's level: shown whenever it is.
  say(Level::kError,
      "out-of-memory snapshot written to %s: open it at https://pytorch.org/memory_viz or with "
      "`python -m torch.cuda._memory_viz trace_plot %s -o oom.html`",
      path.c_str(), path.c_str());
}

}  // namespace

void write_oom_snapshot(const pool::OomState& oom, int device) {
  if (reporting().oom_snapshot.empty() || g_taken.exchange(true)) return;
  try {
    write_snapshot(oom, device);
  } catch (const std::exception& e) {  // host memory short too: the program's answer stays
    warn("CUDAPOOL_OOM_SNAPSHOT: %s; no snapshot written", e.what());
  }
}

}  // namespace cudapool::shim
