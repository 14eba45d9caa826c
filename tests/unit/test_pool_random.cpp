// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_random.cpp: thousands of random malloc/free/empty_cache calls per option
// set (fixed seeds), with the pool's invariants and a reference model checked after each call:
// live blocks never overlap and lie in device memory the backend handed out, the statistics add up
// to the live set, reserved memory is what the backend has given, and out-of-memory is reported
// only when the request cannot fit even after the cache was emptied.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "pool/constants.h"
#include "pool/rounding.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using cudapool::pool::BackendResult;
using cudapool::pool::StatType;
using cudapool::pool::Tracking;

namespace {

// A SimulatedBackend that remembers which device memory it has handed out: whole segments, and
// backed pages of reservations.
class TrackingBackend : public SimulatedBackend {
 public:
  using SimulatedBackend::SimulatedBackend;
  BackendResult allocate_segment(std::size_t bytes, std::uintptr_t* ptr) override {
    const BackendResult r = SimulatedBackend::allocate_segment(bytes, ptr);
    if (r.ok()) ranges_[*ptr] = bytes;
    return r;
  }
  void free_segment(std::uintptr_t ptr, std::size_t bytes) override {
    ranges_.erase(ptr);
    SimulatedBackend::free_segment(ptr, bytes);
  }
  BackendResult map_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t page) override {
    const BackendResult r = SimulatedBackend::map_pages(ptr, bytes, page);
    if (r.ok()) {
      for (std::uintptr_t p = ptr; p < ptr + bytes; p += page) ranges_[p] = page;
    }
    return r;
  }
  void unmap_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t page) override {
    for (std::uintptr_t p = ptr; p < ptr + bytes; p += page) ranges_.erase(p);
    SimulatedBackend::unmap_pages(ptr, bytes, page);
  }
  // Whether [ptr, ptr + size) is wholly inside memory handed out (segments or backed pages).
  bool backed(std::uintptr_t ptr, std::size_t size) const {
    std::uintptr_t pos = ptr;
    const std::uintptr_t end = ptr + size;
    while (pos < end) {
      auto it = ranges_.upper_bound(pos);
      if (it == ranges_.begin()) return false;
      --it;
      if (pos >= it->first + it->second) return false;
      pos = it->first + it->second;
    }
    return true;
  }

 private:
  std::map<std::uintptr_t, std::size_t> ranges_;
};

struct Config {
  const char* name;
  Options options;
  int streams = 1;
  bool fences = false;
};

std::vector<Config> configs() {
  std::vector<Config> out;
  out.push_back({"defaults", Options{}});
  out.push_back({"defaults, 3 streams", Options{}, 3});
  out.push_back({"max_split_size 64 MiB", with_max_split(64 * kMiB)});
  {
    Options o = with_max_split(24 * kMiB);
    o.max_non_split_rounding = 4 * kMiB;
    out.push_back({"max_split_size 24 MiB, max_non_split_rounding 4 MiB, 2 streams", o, 2});
  }
  {
    Options o;
    o.roundup_power2_divisions.fill(4);
    out.push_back({"roundup_power2_divisions 4", o});
  }
  {
    Options o = with_max_split(40 * kMiB);
    o.roundup_power2_divisions = {1, 2, 4, 8, 16, 2, 8, 0, 4, 4, 4, 4, 4, 4, 4, 4};
    out.push_back({"mixed roundup_power2_divisions, max_split_size 40 MiB", o});
  }
  {
    Options o;
    o.per_process_memory_fraction = 0.7;
    o.garbage_collection_threshold = 0.5;
    out.push_back({"fraction 0.7, garbage_collection_threshold 0.5", o, 2});
  }
  {
    Options o = with_max_split(32 * kMiB);
    o.per_process_memory_fraction = 0.6;
    o.garbage_collection_threshold = 0.8;
    out.push_back({"fraction 0.6, gc 0.8, max_split_size 32 MiB", o});
  }
  out.push_back({"expandable", expandable()});
  {
    Options o = expandable();
    o.per_process_memory_fraction = 0.8;
    o.garbage_collection_threshold = 0.5;
    out.push_back({"expandable, fraction 0.8, gc 0.5", o});
  }
  out.push_back({"expandable, 3 streams", expandable(), 3});
  {
    Options o = expandable(with_max_split(48 * kMiB));
    o.roundup_power2_divisions.fill(8);
    out.push_back({"expandable, divisions 8, max_split_size 48 MiB", o});
  }
  {
    Options o = expandable();
    o.large_segment_size = 32 * kMiB;
    out.push_back({"expandable, large_segment_size 32 MiB", o});
  }
  {
    Options o;
    o.large_segment_size = 32 * kMiB;
    out.push_back({"large_segment_size 32 MiB", o});
  }
  {
    Options o = expandable();
    o.expandable_handle = 100 * kMiB;  // 5 pages
    out.push_back({"expandable, handles of 100 MiB", o});
    out.push_back({"expandable, handles of 100 MiB, 3 streams", o, 3});
    out.push_back({"reuse fences, expandable, handles of 100 MiB", o, 2, true});
  }
  out.push_back({"reuse fences", Options{}, 2, true});
  out.push_back({"reuse fences, expandable", expandable(), 2, true});
  {
    Options o = with_max_split(32 * kMiB);
    o.per_process_memory_fraction = 0.8;
    o.garbage_collection_threshold = 0.6;
    out.push_back({"reuse fences, fraction, gc, max_split_size", o, 1, true});
  }
  return out;
}

struct Live {
  std::size_t requested;
  std::size_t block_size;
  std::uintptr_t stream;
  Block* handle;
};

std::size_t random_size(std::uint64_t& rng) {
  const std::uint64_t kind = splitmix(rng) % 100;
  if (kind < 30) return 1 + splitmix(rng) % 4096;                 // tiny
  if (kind < 45) return 1 + splitmix(rng) % kMiB;                 // small pool
  if (kind < 75) return kMiB + 1 + splitmix(rng) % (9 * kMiB);    // large, shared segments
  if (kind < 95) return 10 * kMiB + splitmix(rng) % (70 * kMiB);  // large
  return 80 * kMiB + splitmix(rng) % (200 * kMiB);                // huge
}

class Model {
 public:
  Model(const Config& config, std::size_t device_memory, Tracking tracking = Tracking::kByAddress)
      : config_(config),
        backend_(device_memory),
        pool_(config.options, backend_, 0, nullptr, tracking),
        tracking_(tracking) {
    backend_.set_fences(config.fences);
  }

  void run(std::uint64_t seed, int ops) {
    std::uint64_t rng = seed;
    for (int op = 0; op < ops; ++op) {
      const std::uint64_t what = splitmix(rng) % 1000;
      INFO("op " << op);
      // Allocate more often than free while the device is under three quarters full, less often
      // above: the pool spends time both in plain caching and in the out-of-memory paths.
      const std::size_t limit = pool_.allowed_memory().value_or(backend_.total_memory());
      const bool full = backend_.in_use() > limit / 4 * 3;
      if (what < (full ? 400u : 600u) || live_.empty()) {
        const std::size_t size = random_size(rng);
        const std::uintptr_t stream = splitmix(rng) % static_cast<std::uint64_t>(config_.streams);
        do_alloc(size, stream);
      } else if (what < 950) {
        auto it = live_.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(splitmix(rng) % live_.size()));
        do_free(it->first);
      } else if (what < 965) {
        pool_.empty_cache();
        after_op();
      } else if (what < 985) {
        do_bad_free(rng);
      } else if (config_.fences) {
        if (splitmix(rng) % 2 == 0) {
          backend_.complete_fences();
        } else {
          backend_.hold_fences();
        }
      }
    }
    // Free everything: the device must get every byte back.
    while (!live_.empty()) do_free(live_.begin()->first);
    pool_.empty_cache();
    after_op();
    CHECK(pool_.reserved_bytes() == 0);
    CHECK(backend_.in_use() == 0);
    CHECK(backend_.live_segments() == 0);
    // What may stay is address space only: a reservation that never got a page because the device
    // was full when it was made. PyTorch keeps those too (release_blocks only walks mapped free
    // blocks); they are reused by later misses on the same stream.
    std::size_t leftover = 0;
    pool_.for_each_block([&](const Block& b) {
      REQUIRE(b.expandable != nullptr);
      REQUIRE_FALSE(b.mapped);
      REQUIRE_FALSE(b.is_split());
      ++leftover;
    });
    CHECK(backend_.live_reservations() == leftover);
    CHECK(backend_.backed_pages() == 0);
    CHECK(backend_.live_fences() == 0);
    CHECK(pool_.pending_fences() == 0);
    const auto& s = pool_.stats();
    for (std::size_t t = 0; t < cudapool::pool::kStatTypes; ++t) {
      for (const auto* array :
           {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
            &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes}) {
        CHECK((*array)[t].current == 0);
      }
    }
    CHECK(s.oversize_allocations.current == 0);
    CHECK(s.oversize_segments.current == 0);
    CHECK(s.num_device_alloc >= 1);
    ooms_ = s.num_ooms;
  }

  std::int64_t ooms() const { return ooms_; }
  std::size_t successes() const { return successes_; }

 private:
  void consistent() { require_consistent(pool_, backend_); }

  void after_op() {
    consistent();
    const auto& s = pool_.stats();
    const auto all = static_cast<std::size_t>(StatType::kAll);
    std::int64_t allocated = 0, requested = 0;
    for (const auto& [ptr, l] : live_) {
      allocated += static_cast<std::int64_t>(l.block_size);
      requested += static_cast<std::int64_t>(l.requested);
      const Block* b = pool_.find_allocated(ptr);  // still there, unchanged
      REQUIRE(b != nullptr);
      REQUIRE(b->size == l.block_size);
      REQUIRE(b->stream == l.stream);
      REQUIRE(b->requested_size == l.requested);
    }
    // Blocks freed but still waiting on a reuse fence stay in requested_bytes.
    pool_.for_each_block([&](const Block& b) {
      if (!b.allocated && b.fence != 0) requested += static_cast<std::int64_t>(b.requested_size);
    });
    REQUIRE(s.allocated_bytes[all].current == allocated);
    REQUIRE(s.requested_bytes[all].current == requested);
    REQUIRE(s.allocation[all].current == static_cast<std::int64_t>(live_.size()));
    REQUIRE(pool_.reserved_bytes() == backend_.in_use());
    REQUIRE(pool_.reserved_bytes() <= backend_.total_memory());
  }

  void do_alloc(std::size_t size, std::uintptr_t stream) {
    const Options& o = config_.options;
    const std::size_t rounded = cudapool::pool::round_size(size, o);
    const std::int64_t allocated_before = pool_.stats().allocated_bytes[0].current;
    INFO("malloc(" << size << ", stream " << stream << "), rounded " << rounded);
    const AllocResult r = pool_.malloc(size, stream);
    consistent();
    if (r.status != AllocStatus::kOk) {
      after_op();
      REQUIRE(r.status == AllocStatus::kOutOfMemory);
      check_oom(rounded);
      REQUIRE(pool_.stats().allocated_bytes[0].current == allocated_before);
      return;
    }
    ++successes_;
    const std::uintptr_t p = r.ptr;
    const std::size_t bs = r.block_size;
    REQUIRE(p % 512 == 0);
    REQUIRE(live_.count(p) == 0);
    // No overlap with the live neighbours.
    auto next = live_.upper_bound(p);
    if (next != live_.end()) REQUIRE(p + bs <= next->first);
    if (next != live_.begin()) {
      auto prev = std::prev(next);
      REQUIRE(prev->first + prev->second.block_size <= p);
    }
    REQUIRE(backend_.backed(p, bs));
    const Block* b = pool_.find_allocated(p);
    REQUIRE(b != nullptr);
    REQUIRE(b->size == bs);
    REQUIRE(b->stream == stream);
    REQUIRE(b->requested_size == size);
    // The block handed out fits the rounded request as the split rules allow.
    REQUIRE(bs >= rounded);
    if (rounded <= cudapool::pool::kSmallSize || o.expandable_segments) {
      REQUIRE(bs == rounded);
    } else if (rounded < o.max_split_size) {
      REQUIRE(bs - rounded <= cudapool::pool::kSmallSize);
    } else {
      REQUIRE(bs - rounded < std::max(o.max_non_split_rounding, cudapool::pool::kRoundLarge));
    }
    REQUIRE(r.handle == b);
    live_[p] = Live{size, bs, stream, r.handle};
    after_op();
  }

  // Out of memory must mean that even after every idle segment was freed the request's memory
  // did not fit under the device's capacity or the fraction cap.
  void check_oom(std::size_t rounded) {
    const Options& o = config_.options;
    const std::size_t reserved = pool_.reserved_bytes();
    const std::size_t alloc_size = cudapool::pool::segment_size_for(rounded, o);
    const auto allowed = pool_.allowed_memory();
    REQUIRE(pool_.pending_fences() == 0);  // the release path waited for all of them
    const bool over_cap = allowed.has_value() && reserved + alloc_size > *allowed;
    if (!o.expandable_segments) {
      // Every idle whole segment was given back.
      pool_.for_each_block([&](const Block& b) { REQUIRE_FALSE((!b.allocated && !b.is_split())); });
      REQUIRE((over_cap || reserved + alloc_size > backend_.total_memory()));
    } else {
      const std::size_t page = rounded <= cudapool::pool::kSmallSize ? cudapool::pool::kSmallBuffer
                                                                     : o.large_segment_size;
      const std::size_t pages_bytes = (rounded + page - 1) / page * page;
      REQUIRE((over_cap || backend_.in_use() + pages_bytes > backend_.total_memory()));
    }
  }

  void do_free(std::uintptr_t p) {
    INFO("free(" << p << ")");
    if (tracking_ == Tracking::kByHandle) {
      REQUIRE(pool_.free_handle(live_.at(p).handle) == FreeStatus::kOk);
    } else {
      REQUIRE(pool_.free(p) == FreeStatus::kOk);
    }
    live_.erase(p);
    after_op();
  }

  // Frees of pointers the pool does not own (interior, just past a block, freed) change nothing.
  void do_bad_free(std::uint64_t& rng) {
    std::uintptr_t bad = 0x1000;
    if (!live_.empty()) {
      auto it = live_.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(splitmix(rng) % live_.size()));
      const std::size_t bs = it->second.block_size;
      bad = bs > 512 ? it->first + 512 * (1 + splitmix(rng) % (bs / 512 - 1)) : it->first + 1;
      if (live_.count(bad) != 0) return;
    }
    const auto before = stat_map(pool_);
    // Either way, and by handle also a handle that is not an allocated block.
    REQUIRE(pool_.free(bad) == FreeStatus::kNotOwned);
    REQUIRE(pool_.free_handle(nullptr) == FreeStatus::kNotOwned);
    after_op();
    REQUIRE(stat_map(pool_) == before);
  }

  const Config& config_;
  TrackingBackend backend_;
  DevicePool pool_;
  Tracking tracking_;
  std::map<std::uintptr_t, Live> live_;
  std::size_t successes_ = 0;
  std::int64_t ooms_ = 0;
};

}  // namespace

TEST_CASE("pool: random operations keep the invariants and the reference model") {
  const std::vector<Config> all = configs();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Config& config = all[i];
    for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}}) {
      DYNAMIC_SECTION(config.name << ", seed " << seed) {
        Model model(config, 512 * kMiB);
        model.run(seed * 1000 + i, 3000);
        // The mix of sizes fills a 512 MiB device: both outcomes must have been exercised.
        CHECK(model.successes() > 500);
        CHECK(model.ooms() > 0);
      }
    }
  }
}

// The replay's way (allocated_blocks.h): frees by malloc's handle, the same invariants and model;
// the pool still finds its allocated blocks by address (for checks and reports).
TEST_CASE("pool: random operations by handle keep the invariants and the reference model") {
  const std::vector<Config> all = configs();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Config& config = all[i];
    for (const std::uint64_t seed : {std::uint64_t{4}, std::uint64_t{5}}) {
      DYNAMIC_SECTION(config.name << ", seed " << seed) {
        Model model(config, 512 * kMiB, Tracking::kByHandle);
        model.run(seed * 1000 + i, 3000);
        // The mix of sizes fills a 512 MiB device: both outcomes must have been exercised.
        CHECK(model.successes() > 500);
        CHECK(model.ooms() > 0);
      }
    }
  }
}
