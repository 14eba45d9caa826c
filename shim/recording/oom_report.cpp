// shim/recording/oom_report.cpp: see oom_report.h.
#include "shim/recording/oom_report.h"

#include "shim/support/diagnostics.h"

#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace cudapool::shim {

namespace {

constexpr int kSituations = 64;
std::uint32_t g_seen[kSituations];
int g_seen_count = 0;
std::mutex g_seen_mutex;

int size_class(std::uint64_t bytes) {
  int c = 0;
  while (bytes > 1 && c < 63) {
    bytes >>= 1;
    ++c;
  }
  return c;
}

// Whether this situation was reported before (and remembers it if not, while there is room).
bool seen_before(const pool::OomState& s, int device) {
  const std::uint32_t key =
      (static_cast<std::uint32_t>(device & 0xffff) << 16) |
      (static_cast<std::uint32_t>(s.cause) << 8) |
      static_cast<std::uint32_t>(size_class(s.rounded != 0 ? s.rounded : s.requested));
  std::lock_guard<std::mutex> lock(g_seen_mutex);
  for (int i = 0; i < g_seen_count; ++i) {
    if (g_seen[i] == key) return true;
  }
  if (g_seen_count == kSituations) return true;  // enough said
  g_seen[g_seen_count++] = key;
  return false;
}

}  // namespace

void report_oom(const pool::OomState& state, int device) {
  if (seen_before(state, device)) return;
  say_text(Level::kError, pool::explain_oom(state, device));
}

}  // namespace cudapool::shim
