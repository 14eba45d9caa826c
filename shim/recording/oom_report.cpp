// SPDX-License-Identifier: Apache-2.0
// shim/recording/oom_report.cpp: see oom_report.h.
#include "shim/recording/oom_report.h"

#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "shim/driver/real_driver.h"
#include "shim/support/diagnostics.h"

namespace cudapool::shim {

namespace {

constexpr int kSituations = 64;
std::uint64_t g_seen[kSituations];
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
bool seen_before(std::uint64_t key) {
  std::lock_guard<std::mutex> lock(g_seen_mutex);
  for (int i = 0; i < g_seen_count; ++i) {
    if (g_seen[i] == key) return true;
  }
  if (g_seen_count == kSituations) return true;  // enough said
  g_seen[g_seen_count++] = key;
  return false;
}

// The driver's name of a CUresult ("" when the driver cannot say). A cold path: looked up here.
const char* error_name(int error) {
  using GetErrorName = CUresult (*)(CUresult, const char**);
  auto get = reinterpret_cast<GetErrorName>(real_driver_function("cuGetErrorName"));
  const char* name = nullptr;
  if (get == nullptr || get(static_cast<CUresult>(error), &name) != CUDA_SUCCESS) return "";
  return name != nullptr ? name : "";
}

}  // namespace

void report_oom(const pool::OomState& state, int device) {
  const std::uint64_t key =
      (static_cast<std::uint64_t>(device & 0xffff) << 16) |
      (static_cast<std::uint64_t>(state.cause) << 8) |
      static_cast<std::uint64_t>(size_class(state.rounded != 0 ? state.rounded : state.requested));
  if (seen_before(key)) return;
  say_text(Level::kError, pool::explain_oom(state, device));
}

void report_refusal(const pool::DeviceRefusal& refusal, int device) {
  const std::uint64_t key =
      (std::uint64_t{1} << 63) |
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(refusal.error)) << 24) |
      (static_cast<std::uint64_t>(device & 0xffff) << 8) | static_cast<std::uint64_t>(refusal.step);
  if (seen_before(key)) return;
  say_text(Level::kError, pool::explain_refusal(refusal, device, error_name(refusal.error)));
}

}  // namespace cudapool::shim
