// SPDX-License-Identifier: Apache-2.0
// pool/simulated_backend.h: a Backend with fake device addresses and a device of a chosen size, so
// the pool runs on a CPU (tests, cudapool-replay). It models only capacity: an allocation or a page
// mapping fails with out-of-memory when it would take more bytes than the device has. Its
// addresses lie in [first_address, first_address + span): fresh ranges (address reservations,
// and segments unless placed the driver's way) go up from first_address to a quarter of the span
// and are never reused; segments placed the driver's way (placement.h) come down from the middle
// to that quarter, reusing released ranges as the driver does; the driver's own ranges lie just
// above the middle. A request the range has no room for fails with out-of-memory (counted: never
// an address outside the range, never one that wraps). Tests can also force failures and fences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "pool/backend.h"
#include "pool/placement.h"

namespace cudapool::pool {

class SimulatedBackend : public Backend {
 public:
  // span: at least 4 GiB, and first_address + span at most 2^64.
  explicit SimulatedBackend(std::size_t device_memory,
                            std::uintptr_t first_address = 0x7f0000000000,
                            std::uintptr_t span = std::uintptr_t{1} << 44);

  std::size_t total_memory() const override { return capacity_; }
  bool free_memory(std::size_t* bytes) const override {
    *bytes = capacity_ - in_use_;
    return true;
  }
  BackendResult allocate_segment(std::size_t bytes, std::uintptr_t* ptr) override;
  void free_segment(std::uintptr_t ptr, std::size_t bytes) override;
  BackendResult reserve_address_space(std::size_t bytes, std::uintptr_t* ptr) override;
  void release_address_space(std::uintptr_t ptr, std::size_t bytes) override;
  BackendResult map_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t handle_size) override;
  void unmap_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t page_size) override;

  std::uint64_t fence_after_free(std::uintptr_t ptr, std::size_t size,
                                 std::uintptr_t stream) override;
  bool fence_passed(std::uint64_t fence) override;
  bool fence_wait(std::uint64_t fence) override;
  bool fence_wait_for(std::uint64_t fence, std::uint64_t budget_ns) override;
  void fence_release(std::uint64_t fence) override;

  // Device bytes in use (segments plus backed pages) and their high-water mark.
  std::size_t in_use() const { return in_use_; }
  std::size_t peak_in_use() const { return peak_in_use_; }
  std::size_t live_segments() const { return segments_.size(); }
  std::size_t live_reservations() const { return reservations_.size(); }
  std::size_t backed_pages() const { return backed_pages_; }  // handles mapped (map_pages)
  std::uint64_t segment_allocs() const { return segment_allocs_; }
  std::uint64_t segment_frees() const { return segment_frees_; }

  // Address script: the addresses a real device gave, in order. The next allocate_segment of the
  // same size takes the next scripted address instead of a fresh fake one, so a replay breaks ties
  // between equal blocks (best fit by address) exactly as the logged run did. At the first
  // mismatch (another size, an address still in use, 0, one that wraps past 2^64 or one inside
  // this backend's own range) the rest of the script is dropped.
  void script_segment_address(std::uintptr_t ptr, std::size_t bytes);
  // Where segments without a scripted address go: increasing fresh addresses, never reused (the
  // default: tests read them in order), or the driver's way (placement.h; the replay).
  void place_like_the_driver(bool on) { driver_like_ = on; }
  // Refusal script (a replay of a log where the device ran out of memory): the next segment or
  // page mapping of exactly `bytes` fails with out-of-memory, in the order scripted; a request of
  // another size first drops the rest of the script (the replay went another way).
  void script_refusal(std::size_t bytes) { refusals_.push_back(bytes); }
  std::uint64_t scripted_refusals() const { return refusals_used_; }
  // Forgets refusals not used (the request they were for was served another way).
  void drop_refusals();
  std::uint64_t scripted_segments() const { return scripted_used_; }
  bool script_dropped() const { return script_dropped_; }

  // Fence script (replay of a log whose frees were behind reuse fences): the next
  // fence_after_free returns a fence that holds its block until pass_fence(fence).
  std::uint64_t fence_next_free();
  void pass_fence(std::uint64_t fence) { passed_fences_.insert(fence); }

  // Test controls.
  void fail_next_allocations(int count, BackendStatus status = BackendStatus::kOutOfMemory,
                             int error = 0);
  void set_fences(bool enabled) { fences_enabled_ = enabled; }
  void complete_fences() { fences_complete_ = true; }
  void hold_fences() { fences_complete_ = false; }
  std::size_t live_fences() const { return live_fences_.size(); }
  std::uint64_t fences_waited() const { return fences_waited_; }
  // Bounded waits (fence_wait_for): a fence held by the test passes in one when it takes at most
  // this many ns (a fence "nearly done"); kNever (the default): none passes, as a fence whose
  // kernel runs for long. Scripted fences (replay) never pass in a wait: the log says when.
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  void set_fence_wait_cost(std::uint64_t ns) { fence_wait_cost_ = ns; }
  std::uint64_t bounded_waits() const { return bounded_waits_; }
  std::uint64_t last_wait_budget() const { return last_wait_budget_; }
  // Calls that were inconsistent (a free of an unknown segment, a double map...): must stay 0.
  std::uint64_t misuse() const { return misuse_; }
  // Segments and reservations refused because the address range had no room for them.
  std::uint64_t address_refusals() const { return address_refusals_; }
  std::uintptr_t first_address() const { return first_; }
  std::uintptr_t span() const { return span_; }

 private:
  bool take(std::size_t bytes);
  bool overlaps_segment(std::uintptr_t ptr, std::size_t bytes) const;
  bool scriptable(std::uintptr_t ptr, std::size_t bytes) const;
  bool next_range(std::size_t bytes, std::uintptr_t* ptr);
  DriverPlacement placement_;
  std::set<std::uintptr_t> placed_;  // segments the placement model chose the address of
  bool driver_like_ = false;
  BackendResult forced_failure();

  std::size_t capacity_;
  std::uintptr_t first_, span_;
  std::uintptr_t next_address_;
  std::uintptr_t fresh_end_;  // fresh ranges stay below it; driver-placed chunks above
  std::uint64_t address_refusals_ = 0;
  std::size_t in_use_ = 0;
  std::size_t peak_in_use_ = 0;
  std::map<std::uintptr_t, std::size_t> segments_;
  std::vector<std::pair<std::uintptr_t, std::size_t>> script_;
  std::size_t script_next_ = 0;
  std::uint64_t scripted_used_ = 0;
  bool script_dropped_ = false;
  std::map<std::uintptr_t, std::size_t> reservations_;
  // Backed pages as the runs map_pages made, by start: handles of `handle` bytes from the start,
  // the last one smaller when the run is not a multiple of it. A mapping costs O(log runs),
  // whatever its size; an unmapping splits at most the two runs at its ends.
  struct MappedRun {
    std::uintptr_t end = 0;
    std::size_t handle = 0;
  };
  std::map<std::uintptr_t, MappedRun> runs_;
  std::size_t backed_pages_ = 0;  // handles
  bool mapped_overlaps(std::uintptr_t ptr, std::uintptr_t end) const;
  std::uint64_t segment_allocs_ = 0;
  std::uint64_t segment_frees_ = 0;
  int forced_failures_ = 0;
  BackendResult forced_result_;
  bool fences_enabled_ = false;
  bool fences_complete_ = false;
  std::uint64_t next_fence_ = 1;
  std::set<std::uint64_t> live_fences_;
  std::set<std::uint64_t> passed_fences_;  // scripted fences whose block may come back
  std::uint64_t scripted_fence_ = 0;       // the fence the next free gets (0: none)
  std::uint64_t fences_waited_ = 0;
  std::uint64_t fence_wait_cost_ = kNever;
  std::vector<std::size_t> refusals_;
  std::size_t refusals_next_ = 0;
  std::uint64_t refusals_used_ = 0;
  bool refused_by_script(std::size_t bytes);
  std::uint64_t bounded_waits_ = 0;
  std::uint64_t last_wait_budget_ = 0;
  std::set<std::uint64_t> waited_out_;  // fences passed by a bounded wait
  std::uint64_t misuse_ = 0;
};

}  // namespace cudapool::pool
