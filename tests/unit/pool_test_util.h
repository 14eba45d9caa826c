// SPDX-License-Identifier: Apache-2.0
// tests/unit/pool_test_util.h: shared helpers of the pool tests (test_pool_*.cpp). A Harness owns a
// SimulatedBackend and a DevicePool over it; every operation through it checks the pool's
// invariants and the backend's misuse counter right after, so that a test never goes on from a
// broken state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/options.h"
#include "pool/device_pool.h"
#include "pool/events.h"
#include "pool/invariants.h"
#include "pool/simulated_backend.h"
#include "pool/stats.h"
#include "tests/unit/catch.h"

namespace pooltest {

// A small deterministic random number generator (SplitMix64) for the randomized tests.
inline std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

using cudapool::config::Options;
using cudapool::pool::AllocResult;
using cudapool::pool::AllocStatus;
using cudapool::pool::Block;
using cudapool::pool::DevicePool;
using cudapool::pool::FreeStatus;
using cudapool::pool::SimulatedBackend;

inline constexpr std::size_t kKiB = 1024;
inline constexpr std::size_t kMiB = 1024 * kKiB;
inline constexpr std::size_t kGiB = 1024 * kMiB;

// The pool's invariants, with every problem in the failure text.
inline void require_invariants(const DevicePool& pool) {
  const std::vector<std::string> problems = cudapool::pool::check_invariants(pool);
  if (!problems.empty()) {
    std::string text = std::to_string(problems.size()) + " broken invariant(s):";
    for (const std::string& p : problems) text += "\n  " + p;
    FAIL(text);
  }
}

// The pool's invariants and the backend's misuse counter.
inline void require_consistent(const DevicePool& pool, const SimulatedBackend& backend) {
  require_invariants(pool);
  REQUIRE(backend.misuse() == 0);
}

// Every statistic by its torch.cuda.memory_stats() name.
inline std::map<std::string, std::int64_t> stat_map(const DevicePool& pool) {
  std::map<std::string, std::int64_t> out;
  cudapool::pool::for_each_stat(pool.stats(), [&](std::string_view name, std::int64_t value) {
    out.emplace(std::string(name), value);
  });
  return out;
}

// Records every pool event, for tests of the order of steps.
class EventLog : public cudapool::pool::EventSink {
 public:
  std::uint64_t on_pool_event(const cudapool::pool::PoolEvent& event) override {
    events.push_back(event);
    return events.size();
  }
  // The action names, in order, e.g. {"segment_free", "segment_alloc", "alloc"}.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : events) out.emplace_back(cudapool::pool::action_name(e.action));
    return out;
  }
  std::vector<cudapool::pool::PoolEvent> events;
};

struct Harness {
  explicit Harness(std::size_t device_memory, const Options& options = Options{},
                   cudapool::pool::EventSink* sink = nullptr)
      : backend(device_memory), pool(options, backend, 0, sink) {
    check();
  }

  void check() const { require_consistent(pool, backend); }

  // A malloc whose outcome the test inspects itself.
  AllocResult try_alloc(std::size_t size, std::uintptr_t stream = 0) {
    const AllocResult r = pool.malloc(size, stream);
    check();
    return r;
  }
  // A malloc that must succeed; returns the pointer.
  std::uintptr_t alloc(std::size_t size, std::uintptr_t stream = 0) {
    const AllocResult r = try_alloc(size, stream);
    REQUIRE(r.status == AllocStatus::kOk);
    REQUIRE(r.ptr != 0);
    return r.ptr;
  }
  void free(std::uintptr_t ptr) {
    const FreeStatus s = pool.free(ptr);
    check();
    REQUIRE(s == FreeStatus::kOk);
  }
  void empty_cache() {
    pool.empty_cache();
    check();
  }

  // Size of the allocated block at ptr (0 when none).
  std::size_t block_size(std::uintptr_t ptr) const {
    const Block* b = pool.find_allocated(ptr);
    return b == nullptr ? 0 : b->size;
  }
  // Base of the segment holding the allocated block at ptr.
  std::uintptr_t segment_of(std::uintptr_t ptr) const {
    const Block* b = pool.find_allocated(ptr);
    REQUIRE(b != nullptr);
    return b->segment;
  }
  // ptr relative to the base of its segment.
  std::size_t offset_of(std::uintptr_t ptr) const { return ptr - segment_of(ptr); }

  std::int64_t stat(const std::string& name) const {
    const auto all = stat_map(pool);
    const auto it = all.find(name);
    REQUIRE(it != all.end());
    return it->second;
  }
  std::int64_t cur(const char* array, const char* type) const {
    return stat(std::string(array) + "." + type + ".current");
  }
  const cudapool::pool::DeviceStats& stats() const { return pool.stats(); }

  // Number of blocks (of any state) whose segment base is `segment`.
  std::size_t blocks_in_segment(std::uintptr_t segment) const {
    std::size_t n = 0;
    pool.for_each_block([&](const Block& b) { n += b.segment == segment ? 1 : 0; });
    return n;
  }
  // Number of idle (free, backed, no pending fence) blocks in the pool.
  std::size_t idle_blocks() const {
    std::size_t n = 0;
    pool.for_each_block(
        [&](const Block& b) { n += (!b.allocated && b.mapped && b.fence == 0) ? 1 : 0; });
    return n;
  }

  SimulatedBackend backend;
  DevicePool pool;
};

inline Options with_max_split(std::size_t max_split, Options o = Options{}) {
  o.max_split_size = max_split;
  return o;
}

inline Options expandable(Options o = Options{}) {
  o.expandable_segments = true;
  return o;
}

}  // namespace pooltest
