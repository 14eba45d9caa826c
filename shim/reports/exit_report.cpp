// SPDX-License-Identifier: Apache-2.0
// shim/reports/exit_report.cpp: see exit_report.h.
#include "shim/reports/exit_report.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "log/file.h"
#include "log/format.h"
#include "pool/summary.h"
#include "shim/recording/event_log.h"
#include "shim/reports/exit_snapshot.h"
#include "shim/support/diagnostics.h"
#include "shim/support/guard.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

namespace {

std::atomic<bool> g_done{false};

std::string human_bytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

// The table and leak report of every live pool.
std::string summary_text(const std::vector<PoolAtExit>& pools) {
  std::string out;
  const std::uint64_t start = reporting().start_ns;
  for (const PoolAtExit& p : pools) {
    out += pool::memory_summary(p.stats, p.device);
    std::uint64_t total = 0;
    for (const log::Leak& l : p.leaks) total += l.block_size;
    char line[256];
    std::snprintf(line, sizeof line,
                  "Leak report, device %d: %zu block%s still allocated at exit (%s)\n", p.device,
                  p.leaks.size(), p.leaks.size() == 1 ? "" : "s", human_bytes(total).c_str());
    out += line;
    // The first blocks, as many as the log's summary line lists at most (log/format.h).
    const std::size_t listed = std::min(p.leaks.size(), log::kMaxSummaryLeaks);
    for (std::size_t i = 0; i < listed; ++i) {
      const log::Leak& l = p.leaks[i];
      const double t = l.t_ns >= start ? static_cast<double>(l.t_ns - start) / 1e9 : 0.0;
      std::snprintf(
          line, sizeof line,
          "  ptr 0x%llx  requested %zu B  block %zu B  seq %llu  at %.6f s  thread %llu\n",
          static_cast<unsigned long long>(l.ptr), static_cast<std::size_t>(l.size),
          static_cast<std::size_t>(l.block_size), static_cast<unsigned long long>(l.seq), t,
          static_cast<unsigned long long>(l.tid));
      out += line;
    }
    if (listed < p.leaks.size()) {
      std::uint64_t rest = 0;
      for (std::size_t i = listed; i < p.leaks.size(); ++i) rest += p.leaks[i].block_size;
      std::snprintf(line, sizeof line, "  ... and %zu more block%s (%s)\n", p.leaks.size() - listed,
                    p.leaks.size() - listed == 1 ? "" : "s", human_bytes(rest).c_str());
      out += line;
    }
    out += "\n";
  }
  if (out.empty()) out = "cudapool: no device memory was allocated through the pool\n";
  return out;
}

// The log's summary line: one entry per device, the pools of several contexts on one device
// summed (statistics and fence counters), and every leak.
log::Summary summary_line(const std::vector<PoolAtExit>& pools) {
  log::Summary summary;
  for (const PoolAtExit& p : pools) {
    auto same = std::find_if(summary.devices.begin(), summary.devices.end(),
                             [&](const auto& entry) { return entry.first == p.device; });
    if (same == summary.devices.end()) {
      summary.devices.emplace_back(p.device, p.stats);
      summary.fences.emplace_back();
      for (const auto& [name, value] : p.fence_counters) {
        summary.fences.back().emplace_back(name, value);
      }
    } else {
      pool::add_pool_stats(same->second, p.stats);
      auto& sums = summary.fences[static_cast<std::size_t>(same - summary.devices.begin())];
      for (std::size_t k = 0; k < p.fence_counters.size() && k < sums.size(); ++k) {
        sums[k].second += p.fence_counters[k].second;
      }
    }
    summary.leaks.insert(summary.leaks.end(), p.leaks.begin(), p.leaks.end());
  }
  return summary;
}

void write_summary(const std::string& target, const std::string& text) {
  // Never a signal (a closed pipe or FIFO, ulimit -f) nor a wait without end (a reader that stopped
  // reading): log/descriptor.h's write_all, which costs the summary, never the exit status.
  if (target == "stderr") {
    log::write_all(STDERR_FILENO, text);
    return;
  }
  if (target == "stdout") {
    if (const int err = log::write_all(STDOUT_FILENO, text); err != 0) {
      warn("CUDAPOOL_SUMMARY: stdout: cannot write the summary (%s)",
           log::failure_text(err).c_str());
    }
    return;
  }
  // Made the way the log is (log/file.h): an existing character device or FIFO is written as it
  // is; otherwise a new file, never through a symlink nor over an existing file (NAME.k, with the
  // log's note), that appears with the whole summary in it; nothing is created in /dev.
  const log::CreatedFile created = log::create_log_file(target, text, log::FileKind::kSummary);
  if (created.fd >= 0) {
    if (!created.note.empty()) warn("%s", created.note.c_str());
    ::close(created.fd);
    return;
  }
  warn("CUDAPOOL_SUMMARY: %s; the summary goes to stderr", created.error.c_str());
  log::write_all(STDERR_FILENO, text);
}

}  // namespace

void run_exit_report() {
  if (g_done.exchange(true)) return;
  ReentrancyGuard guard;
  const Reporting& r = reporting();
  const bool table = !r.summary_target.empty();
  const bool line = log_open();
  if (!table && !line) return;
  const std::vector<PoolAtExit> pools = exit_snapshot();
  if (table) write_summary(r.summary_target, summary_text(pools));
  if (line) finish_log(summary_line(pools));
}

}  // namespace cudapool::shim
