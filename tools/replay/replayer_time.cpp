// SPDX-License-Identifier: Apache-2.0
// tools/replay/replayer_time.cpp: the replay's clock (replayer.h): the memory held between the
// log's events (HeldOverTime) and the idle-release ticks the replay simulates from the events'
// times when its idle settings are not the log's. Not here: applying an event (replayer.cpp), the
// pools (replayer_pools.cpp), the idle policy itself (pool/device_pool_idle.cpp).
#include "tools/replay/replayer.h"

namespace cudapool::replay {

std::uint64_t Replayer::reserved_now() const {
  std::uint64_t total = 0;
  for (const auto& [key, d] : devices_) total += d.pool->reserved_bytes();
  return total;
}

void Replayer::idle_tick(Device& d, bool logged) {
  const std::uint64_t before = d.pool->reserved_bytes();
  const bool ticked = d.pool->release_idle_tick(logged);
  if (ticked && !logged) ++counts_.idle_ticks_simulated;
  const std::uint64_t after = d.pool->reserved_bytes();
  if (after < before) {
    ++counts_.idle_releases;
    counts_.idle_released_bytes += before - after;
  }
}

void Replayer::advance_time(std::uint64_t t_ns) {
  reserved_total_ = reserved_now();  // as the last event left it
  if (!time_started_) {
    time_started_ = true;
    held_.first_t_ns = held_.last_t_ns = t_ns;
    next_idle_tick_ns_ = t_ns + pool::idle_tick_ns(options_);
    return;
  }
  if (t_ns <= held_.last_t_ns) return;  // no time passed (threads' events may interleave)
  const auto hold_until = [&](std::uint64_t t) {
    held_.reserved_byte_ns +=
        static_cast<long double>(reserved_total_) * static_cast<long double>(t - held_.last_t_ns);
    held_.last_t_ns = t;
  };
  if (options_.idle_release_ms != 0 && !idle_from_log_) {
    const std::uint64_t tick = pool::idle_tick_ns(options_);
    std::uint32_t ticks_in_gap = 0;
    while (next_idle_tick_ns_ <= t_ns) {
      hold_until(next_idle_tick_ns_);
      if (++ticks_in_gap > pool::kIdleTicks + 1) {
        // With no event between, every block cached now has been unused long enough and was
        // released unless the floor kept it: the ticks left in the gap change nothing.
        next_idle_tick_ns_ += (t_ns - next_idle_tick_ns_) / tick * tick + tick;
        break;
      }
      for (auto& [key, d] : devices_) idle_tick(d, false);
      reserved_total_ = reserved_now();
      next_idle_tick_ns_ += tick;
    }
  }
  hold_until(t_ns);
}

}  // namespace cudapool::replay
