// SPDX-License-Identifier: Apache-2.0
// pool/device_pool.h: one device's caching allocator, with PyTorch 2.11 CUDACachingAllocator's
// policy (rounding, small/large pools, best fit, splitting, merging, oversize blocks, garbage
// collection, memory fraction, expandable segments, the retry order on out-of-memory, statistics).
// Not thread-safe: the caller serializes calls (the shim holds a lock per device). No CUDA, no
// environment, no I/O: device memory comes from a Backend, events go to an optional EventSink.
// The rules and where they come from: docs/pool-policy.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "config/options.h"
#include "pool/allocated_blocks.h"
#include "pool/backend.h"
#include "pool/block.h"
#include "pool/events.h"
#include "pool/node_cache.h"
#include "pool/oom.h"
#include "pool/ptr_map.h"
#include "pool/refusal.h"
#include "pool/split_shadows.h"
#include "pool/stats.h"

namespace cudapool::pool {

struct BlockBySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};

struct BlockByAddress {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};

// A search key for the free sets: a Block with only the fields the comparators read.
inline Block sort_key(std::uintptr_t stream, std::size_t size = 0, std::uintptr_t ptr = 0) {
  Block key = kFreshBlock;
  key.stream = stream;
  key.size = size;
  key.ptr = ptr;
  return key;
}

// Erases one block from an ordered set with a single descent (set::erase(key) makes two).
template <class Set>
void erase_block(Set& set, Block* block) {
  auto it = set.find(block);
  if (it != set.end()) set.erase(it);
}

using SizeOrderedBlocks = std::set<Block*, BlockBySize, CachingAllocator<Block*>>;
using AddressOrderedBlocks = std::set<Block*, BlockByAddress, CachingAllocator<Block*>>;

// The cached blocks of one pool (small or large).
struct BlockPool {
  BlockPool(bool small, NodeCache* nodes)
      : blocks(BlockBySize{}, CachingAllocator<Block*>(nodes)),
        unmapped(BlockByAddress{}, CachingAllocator<Block*>(nodes)),
        is_small(small) {}

  SizeOrderedBlocks blocks;       // free, mapped blocks: best fit by (stream, size, address)
  AddressOrderedBlocks unmapped;  // unbacked ranges of expandable segments
  const bool is_small;
  std::int64_t lookups = 0;  // cache lookups counted for garbage-collection ages
};

// Address space reserved for one expandable segment, backed page by page. Each backed page lies in
// one driver allocation (a handle) of at most handle_pages pages: map_block makes them, a run of
// pages at a time; unmap_block gives back only whole ones (device_pool_expandable.cpp).
struct ExpandableSegment {
  std::uintptr_t base = 0;
  std::size_t page_size = 0;  // 2 MiB (small pool) or large_segment_size (large pool)
  std::size_t pages = 0;      // capacity in pages
  std::uintptr_t stream = 0;
  std::size_t handle_pages = 1;  // expandable_handle_mb in pages (large pool); 1: PyTorch's way
  // With handle_pages > 1, the handles mapped: first page -> length in pages (memory in
  // proportion to what is mapped, not to the reservation).
  std::map<std::size_t, std::size_t> handles;
  std::size_t size() const { return pages * page_size; }
};

enum class AllocStatus : std::uint8_t { kOk, kOutOfMemory, kBackendError };

// Who asks for a block: kept in the block while it is allocated (leak reports).
struct AllocTag {
  std::uint64_t seq = 0;
  std::uint64_t t_ns = 0;
  std::uint64_t tid = 0;
  std::uint32_t stack = 0;  // Block::alloc_stack
};

struct AllocResult {
  std::uintptr_t ptr = 0;
  AllocStatus status = AllocStatus::kOk;
  int backend_error = 0;  // with kBackendError
  std::size_t block_size = 0;
  bool cache_hit = false;
  Block* handle = nullptr;  // the block handed out (with kOk): for free_handle
};

enum class FreeStatus : std::uint8_t { kOk, kNotOwned };

// Idle release: a cached block goes back once it was unused for more than kIdleTicks ticks of the
// pool's idle clock, which ticks every idle_release_ms / kIdleTicks (at least 1 ms): unused for
// idle_release_ms to 1.25 idle_release_ms.
inline constexpr std::uint32_t kIdleTicks = 4;
inline std::uint64_t idle_tick_ns(const config::Options& options) {
  const std::uint64_t ns = options.idle_release_ms * 1000000 / kIdleTicks;
  return ns < 1000000 ? 1000000 : ns;
}

class DevicePool {
 public:
  // tracking: how the user frees, by address (free) or by malloc's handle (free_handle).
  DevicePool(const config::Options& options, Backend& backend, int device = 0,
             EventSink* sink = nullptr, Tracking tracking = Tracking::kByAddress);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // A block of at least `size` bytes usable on `stream`. Callers reject size 0 before this
  // (PyTorch hands out nothing for 0; the driver answers CUDA_ERROR_INVALID_VALUE).
  AllocResult malloc(std::size_t size, std::uintptr_t stream = 0, const AllocTag& tag = {});
  // Frees the block that starts at `ptr`; kNotOwned when no allocated block starts there.
  FreeStatus free(std::uintptr_t ptr);
  // The same for the block malloc handed out as `handle` (a pool tracked by handle: no lookup by
  // address); kNotOwned when it is not allocated here.
  FreeStatus free_handle(Block* handle);
  // Gives every idle segment back to the device (waiting for pending reuse fences first).
  void empty_cache();
  // empty_cache without waiting: the reuse fences that passed are settled (polled, never waited
  // for), then every idle segment goes back; a block still behind a fence stays, and so does its
  // segment. For a request from outside the program (the shim's control endpoint), which must not
  // keep the pool's lock while the device finishes work. Emits kEmptyCache too.
  void release_idle_segments();
  // Settles the reuse fences that passed (polled, never waited for): their blocks come back into
  // the cache, each emitting kFreeCompleted, in the order of the frees. Every request does this
  // first; the replay calls it where the log says a fence passed (its free_completed event), so
  // that blocks come back in the logged run's order.
  void settle_passed_fences() { process_fences(); }
  // Idle release (idle_release_ms; docs/pool-policy.md, "Idle release"). Its clock ticks every
  // idle_tick_ns(options) (the shim's release thread; the replay at the log's ticks or at
  // simulated ones). One tick settles the reuse fences that passed (polled, never waited for),
  // counts one tick, then gives back the cached memory unused for more than kIdleTicks ticks
  // (whole segments, and the whole unused pages of expandable segments), the longest unused first,
  // as long as reserved memory stays at or above idle_release_floor (a segment goes whole or not
  // at all; of an expandable segment's unused range, as many of its highest pages as leave the
  // floor reserved, the rest kept mapped and cached; an island above an unmapped range goes whole,
  // floor or not); and emits kIdleRelease (size:
  // the bytes given back, maybe 0). A pool with no cached block that could give memory back does
  // not tick (returns false, emits nothing): such a block can only become one by a merge or new
  // pages, which stamp it anew. Off (idle_release_ms 0): no tick either. The caller makes sure the
  // device is done with the memory it may release: the shim synchronizes first when
  // idle_release_due() says a tick would release something.
  // A tick that settled a fence is one too, whatever it gives back. logged: the replay ticking at
  // a logged idle_release event, which always ticks.
  bool release_idle_tick(bool logged = false);
  // Whether the next release_idle_tick() would give memory back (the floor counted). Cheap:
  // O(cached blocks).
  bool idle_release_due() const;
  // The device memory behind the pool is gone (its context was destroyed or reset): forgets every
  // block and segment without asking the backend, and gives the bookkeeping's memory back to the
  // heap. The pool is as new afterwards, statistics included.
  void forget_all();

  // PyTorch's setMemoryFraction: caps reserved memory at fraction * total memory (1 = no cap).
  void set_memory_fraction(double fraction);
  std::optional<std::size_t> allowed_memory() const { return allowed_memory_; }

  // The replay's watch on other split limits (split_shadows.h): every decision that reads them is
  // reported to *shadows from now on (nullptr: none). Not owned.
  void watch(SplitShadows* shadows) { shadows_ = shadows; }

  const DeviceStats& stats() const { return stats_; }
  const config::Options& options() const { return options_; }
  int device() const { return device_; }
  std::size_t reserved_bytes() const { return reserved_; }
  // Bytes held in the cache and free for the program (idle cached blocks).
  std::size_t idle_cached_bytes() const;
  // The allocated block starting at ptr, or nullptr.
  const Block* find_allocated(std::uintptr_t ptr) const { return active_.find(ptr); }
  // Whether the pool lists `block` among its allocated blocks (for check_invariants).
  bool lists_allocated(const Block* block) const { return active_.holds(block); }
  // Sets the holder word of the allocated block at ptr (see Block::holder).
  void set_holder(std::uintptr_t ptr, std::uintptr_t holder) {
    if (Block* b = active_.find(ptr)) b->holder = holder;
  }
  // The allocated block holding ptr (its start or inside it), or nullptr. O(allocated blocks).
  const Block* find_allocated_containing(std::uintptr_t ptr) const;
  // Every block of every segment, for checks and snapshots: fn(block).
  void for_each_block(const std::function<void(const Block&)>& fn) const;
  // For check_invariants: each free set in its key order, each block found by its key.
  bool cache_sets_ordered() const;
  // The state at the last out-of-memory this pool answered (oom.h); requested == 0 before one.
  const OomState& last_oom() const { return last_oom_; }
  // What the device refused at the last request answered with kBackendError (refusal.h);
  // requested == 0 before one.
  const DeviceRefusal& last_refusal() const { return last_refusal_; }
  std::size_t pending_fences() const { return pending_.size(); }
  // Bytes of freed blocks still waiting on a reuse fence.
  std::size_t pending_fence_bytes() const;

 private:
  // One malloc in progress (PyTorch's AllocParams).
  struct Request {
    std::size_t size = 0;  // rounded request
    std::uintptr_t stream = 0;
    BlockPool* pool = nullptr;
    std::size_t alloc_size = 0;  // size of a new segment for it
    bool expandable_active = false;
    Block* block = nullptr;  // the block found or made
    // Where get_free_block found it: the block is still in the free set until take_found_block
    // takes it out (or shrinks it in place, see note "in-place keys" in device_pool.cpp).
    SizeOrderedBlocks::iterator found{};
    bool in_set = false;
    BackendResult err;
  };

  // malloc steps, in PyTorch's order. get_free_block<false> only looks (counts no GC age); a
  // template so that the counting call inlines into malloc as before.
  template <bool kCount = true>
  bool get_free_block(Request& r);
  bool alloc_block(Request& r, bool is_retry);
  bool release_available_cached_blocks(const Request& r);
  void release_cached_blocks();
  void garbage_collect_cached_blocks();
  Block* take_found_block(Request& r, std::size_t requested, bool split_remainder,
                          const AllocTag& tag);
  bool should_split(const Block* block, std::size_t size, bool expandable_active) const;

  // free steps.
  void free_block(Block* block);
  // free and free_handle after the block left the allocated blocks.
  void free_allocated(Block* block);
  // Merges a freed block into its one cached neighbour in place; the neighbour, or nullptr.
  Block* absorb_into_free_neighbour(Block* block, std::size_t* subsumed);
  std::size_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool);
  void release_block(Block* block);
  void release_blocks(BlockPool& pool);

  // reuse fences.
  void process_fences();
  void wait_all_fences();
  // Before a new segment: waits a little (about what the segment's cudaMalloc would cost) for
  // fenced blocks of the request's pool that could serve it.
  void wait_for_fenced_blocks(const Request& r);

  // expandable segments.
  Block* find_expandable_block(std::uintptr_t stream, BlockPool& pool, std::size_t size);
  bool map_block(Block* to_map, std::size_t size);
  Block* try_allocate_expandable_block(std::uintptr_t stream, BlockPool& pool, std::size_t size);
  // The pages of the whole handles inside a free, backed block: the highest of them that hold at
  // most `most` bytes, as a page range [first, second) of its segment (empty: first == second).
  std::pair<std::size_t, std::size_t> unmappable_pages(const Block* block,
                                                       std::size_t most = SIZE_MAX) const;
  // Unbacks those pages; block becomes the unbacked range, what is left of it stays cached beside
  // it.
  void unmap_block(Block* block, std::size_t most = SIZE_MAX);
  void release_expandable_segment(Block* block);

  void insert_cached(BlockPool& pool, Block* block);
  Block* new_block(std::uintptr_t ptr, std::size_t size, std::uintptr_t stream, BlockPool* pool);
  void delete_block(Block* block);
  // Destroys every Block object (bookkeeping only; see ~DevicePool).
  void destroy_all_blocks();
  // Applies fn to the device-wide statistics index and to the index of the block's pool.
  template <class Fn>
  void update(const BlockPool& pool, Fn&& fn) {
    fn(static_cast<std::size_t>(StatType::kAll));
    fn(static_cast<std::size_t>(pool.is_small ? StatType::kSmallPool : StatType::kLargePool));
  }
  // The event to the sink; returns the sink's number for it (0: no sink, or it keeps none).
  std::uint64_t emit(Action action, std::uintptr_t ptr, std::size_t size, std::size_t block_size,
                     std::uintptr_t segment, std::uintptr_t stream, bool cache_hit = false);
  // Records last_oom_ for a failed request and emits kOom with it.
  void out_of_memory(std::size_t requested, std::size_t rounded, std::size_t segment_size,
                     std::uintptr_t stream);
  // A device request (a segment, an address range or pages of `page` bytes; `bytes` in all) was
  // answered `res`: out-of-memory is remembered as the bytes refused (refused_bytes_), another
  // failure as last_refusal_ (and backend_failure_ for the expandable-segment steps).
  void note_device_answer(const BackendResult& res, RefusalStep step, std::size_t bytes,
                          std::size_t page);
  // Completes last_refusal_ for a failed request and emits kAllocFailed with it.
  void refused(std::size_t requested, std::size_t rounded, std::uintptr_t stream);
  bool gc_active() const;
  // Idle release: the bytes a cached block would give back (a whole segment, or the whole handles
  // of an expandable segment's free range); whether it has been unused long enough at tick `now`.
  std::size_t idle_releasable_bytes(const Block* block) const;
  // What of those a tick gives back when reserved memory may drop by `room` bytes (to the floor):
  // all of them when they fit; else the whole handles that fit, in an expandable segment; else 0.
  std::size_t idle_release_bytes(const Block* block, std::size_t room) const;
  bool idle_long_enough(const Block* block, std::uint32_t now) const;

  config::Options options_;
  Backend& backend_;
  int device_;
  EventSink* sink_;
  SplitLimits split_;                // options_'s two split limits
  SplitShadows* shadows_ = nullptr;  // the replay's (watch())

  NodeCache block_nodes_;  // Block objects
  NodeCache set_nodes_;    // std::set nodes (declared before the sets that use it)
  BlockPool small_;
  BlockPool large_;
  AllocatedBlocks active_;  // allocated blocks, by address or by handle
  struct PendingFence {
    std::uint64_t fence;
    Block* block;
  };
  std::vector<PendingFence> pending_;
  std::uint64_t fence_wait_gave_up_ = 0;  // the oldest pending fence when a wait last ran out
  std::vector<ExpandableSegment*> expandable_segments_;

  std::size_t reserved_ = 0;      // PyTorch's total_allocated_memory
  std::uint32_t idle_ticks_ = 0;  // ticks of the idle-release clock (release_idle_tick)
  std::optional<std::size_t> allowed_memory_;
  BackendResult backend_failure_;  // a non-OOM failure inside an expandable-segment step
  // Bytes of the last device request (or segment checked against the cap) refused with
  // out-of-memory during the current malloc; 0 when none was.
  std::size_t refused_bytes_ = 0;
  OomState last_oom_;
  DeviceRefusal last_refusal_;
  DeviceStats stats_;
};

}  // namespace cudapool::pool
