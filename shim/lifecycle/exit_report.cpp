// shim/lifecycle/exit_report.cpp: see exit_report.h.
#include "shim/lifecycle/exit_report.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "log/file.h"
#include "pool/summary.h"
#include "shim/lifecycle/startup.h"
#include "shim/pools/context_registry.h"
#include "shim/recording/event_log.h"
#include "shim/support/guard.h"

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

struct Leak {
  std::uintptr_t ptr;
  std::size_t requested;
  std::size_t block;
  std::uint64_t seq, t_ns, tid;
};

// The table and leak report of every live pool.
std::string summary_text() {
  std::string out;
  const std::uint64_t start = reporting().start_ns;
  for_each_pool([&](ContextPool& p) {
    pool::DeviceStats stats;
    std::vector<Leak> leaks;
    {
      std::lock_guard<SpinLock> lock(p.mutex);
      stats = p.pool.stats();
      p.pool.for_each_block([&](const pool::Block& b) {
        if (b.allocated) {
          leaks.push_back(
              Leak{b.ptr, b.requested_size, b.size, b.alloc_seq, b.alloc_t_ns, b.alloc_tid});
        }
      });
    }
    out += pool::memory_summary(stats, p.device);
    std::size_t total = 0;
    for (const Leak& l : leaks) total += l.block;
    char line[256];
    std::snprintf(line, sizeof line,
                  "Leak report, device %d: %zu block%s still allocated at exit (%s)\n", p.device,
                  leaks.size(), leaks.size() == 1 ? "" : "s", human_bytes(total).c_str());
    out += line;
    for (const Leak& l : leaks) {
      const double t = l.t_ns >= start ? static_cast<double>(l.t_ns - start) / 1e9 : 0.0;
      std::snprintf(
          line, sizeof line,
          "  ptr 0x%llx  requested %zu B  block %zu B  seq %llu  at %.6f s  thread %llu\n",
          static_cast<unsigned long long>(l.ptr), l.requested, l.block,
          static_cast<unsigned long long>(l.seq), t, static_cast<unsigned long long>(l.tid));
      out += line;
    }
    out += "\n";
    return false;
  });
  if (out.empty()) out = "cudapool: no device memory was allocated through the pool\n";
  return out;
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

void write_summary(const std::string& target) {
  const std::string text = summary_text();
  if (target == "stderr") {
    write_all(2, text);
    return;
  }
  if (target == "stdout") {
    write_all(1, text);
    return;
  }
  // The log's safe creation: never through a symlink, never over an existing file (NAME.k).
  const log::CreatedFile created = log::create_log_file(target);
  if (created.fd >= 0) {
    write_all(created.fd, text);
    ::close(created.fd);
    return;
  }
  warn("CUDAPOOL_SUMMARY: %s; the summary goes to stderr", created.error.c_str());
  write_all(2, text);
}

void at_exit() {
  run_exit_report();
}

}  // namespace

void register_exit_report() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(at_exit); });
}

void run_exit_report() {
  if (g_done.exchange(true)) return;
  if (mode() != Mode::kPooling) return;  // a child after fork, or disabled: report nothing
  ReentrancyGuard guard;
  const Reporting& r = reporting();
  if (!r.summary_target.empty()) write_summary(r.summary_target);
  finish_log();
}

}  // namespace cudapool::shim
