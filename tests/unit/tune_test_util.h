// SPDX-License-Identifier: Apache-2.0
// tests/unit/tune_test_util.h: shared helpers of the tune tests (test_tune_*.cpp): the outcome of
// one setting's replay of a whole log, read as `cudapool replay` reads it, and random logs of a
// small device. Not a test.
#pragma once

#include <cstdint>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tools/replay/replayer.h"
#include "tools/tune/pass.h"

namespace tunetest {

constexpr std::uint64_t kMiB = 1ull << 20;

// A log of random allocations and frees on one device of `device_bytes`.
// With completions, the log's header says reuse fences are logged and each free_requested has its
// free_completed: most on the next line, the others some events later (behind a fence).
inline std::string random_log(std::mt19937_64& rng, std::uint64_t device_bytes, int events,
                              bool completions = false) {
  std::string text = R"({"schema":"cudapool.log/1","version":"0.1.0","devices":[{"id":0,)"
                     R"("name":"t","total_memory":)" +
                     std::to_string(device_bytes) + "}]" +
                     (completions ? R"(,"options":{"reuse_fence":"events"})" : "") + "}\n";
  std::vector<std::uint64_t> fenced;
  std::vector<std::uint64_t> live;
  std::uint64_t next_ptr = 1, seq = 0;
  const auto line = [&](const char* action, std::uint64_t ptr, std::uint64_t size) {
    ++seq;
    text += R"({"seq":)" + std::to_string(seq) + R"(,"t_ns":)" + std::to_string(seq) +
            R"(,"tid":1,"dev":0,"action":")" + action + R"(","ptr":"0x)" + std::to_string(ptr) +
            R"(","size":)" + std::to_string(size) + "}\n";
  };
  // Sizes from a few ranges: the small pool, 1-10 MiB, and large ones around the split limits.
  const std::uint64_t sizes[] = {700,       5000,          300 * 1024,    3 * kMiB + 5,
                                 7 * kMiB,  12 * kMiB,     23 * kMiB + 1, 30 * kMiB,
                                 47 * kMiB, 61 * kMiB + 9, 100 * kMiB,    150 * kMiB + 1};
  for (int i = 0; i < events; ++i) {
    if (!live.empty() && rng() % 100 < 45) {
      const std::size_t at = rng() % live.size();
      line("free_requested", live[at], 0);
      if (completions) {
        if (rng() % 4 != 0) {
          line("free_completed", live[at], 0);
        } else {
          fenced.push_back(live[at]);
        }
      }
      live[at] = live.back();
      live.pop_back();
    } else {
      const std::uint64_t ptr = next_ptr++;
      line("alloc", ptr, sizes[rng() % std::size(sizes)]);
      live.push_back(ptr);
    }
    if (!fenced.empty() && rng() % 3 == 0) {
      line("free_completed", fenced.front(), 0);
      fenced.erase(fenced.begin());
    }
  }
  for (const std::uint64_t ptr : fenced) line("free_completed", ptr, 0);
  return text;
}

inline cudapool::tune::Outcome whole_replay(const std::string& text, const std::string& conf) {
  cudapool::replay::ReplaySettings settings;
  settings.conf = conf;
  cudapool::replay::Replayer r(settings);
  std::istringstream in(text);
  r.feed_stream(in);
  return cudapool::tune::outcome_of(r);
}

}  // namespace tunetest
