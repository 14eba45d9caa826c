// SPDX-License-Identifier: Apache-2.0
// pool/device_pool.cpp: allocation (see device_pool.h): finding, splitting and making blocks, and
// the pool's queries. Not here: the free path and merging (device_pool_free.cpp), releasing
// memory, garbage collection and reuse fences (device_pool_release.cpp), expandable segments
// (device_pool_expandable.cpp), a request that fails (device_pool_failure.cpp).
#include "pool/device_pool.h"

#include <algorithm>
#include <limits>

#include "pool/constants.h"
#include "pool/rounding.h"

namespace cudapool::pool {

namespace {
// Note "in-place keys": whether the cached block at `it` still sorts between its set neighbours
// with the key (size, ptr). A key that shrinks (a split gives the block's front away) can only
// fall below its predecessor; a key that grows (a merge) can only rise above its successor; so
// each check looks at one neighbour only.

bool still_sorted_after_shrink(const SizeOrderedBlocks& set, SizeOrderedBlocks::const_iterator it,
                               std::size_t size, std::uintptr_t ptr) {
  if (it == set.begin()) return true;
  const Block key = sort_key((*it)->stream, size, ptr);
  return BlockBySize{}(*std::prev(it), &key);
}

// Requests above this are refused as out of memory before any rounding could overflow.
constexpr std::size_t kLargestRequest = std::size_t{1} << 60;

}  // namespace

DevicePool::DevicePool(const config::Options& options, Backend& backend, int device,
                       EventSink* sink, Tracking tracking)
    : options_(options),
      backend_(backend),
      device_(device),
      sink_(sink),
      split_(SplitLimits::of(options)),
      small_(true, &set_nodes_),
      large_(false, &set_nodes_),
      active_(tracking) {
  stats_.max_split_size = static_cast<std::int64_t>(options_.max_split_size);
  set_memory_fraction(options_.per_process_memory_fraction);
}

DevicePool::~DevicePool() {
  // Drops the bookkeeping only: device memory is the backend's to reclaim (a context teardown
  // must not free memory through a dead context).
  destroy_all_blocks();
}

void DevicePool::forget_all() {
  destroy_all_blocks();
  active_.clear();
  pending_ = {};
  expandable_segments_ = {};
  reserved_ = 0;
  stats_ = DeviceStats{};
  block_nodes_.trim();
  set_nodes_.trim();
}

void DevicePool::destroy_all_blocks() {
  std::vector<Block*> all;
  active_.for_each([&](Block* b) { all.push_back(b); });
  for (const PendingFence& p : pending_) all.push_back(p.block);
  for (BlockPool* pool : {&small_, &large_}) {
    all.insert(all.end(), pool->blocks.begin(), pool->blocks.end());
    all.insert(all.end(), pool->unmapped.begin(), pool->unmapped.end());
    pool->blocks.clear();
    pool->unmapped.clear();
  }
  for (Block* b : all) destroy_cached(block_nodes_, b);
  for (ExpandableSegment* es : expandable_segments_) delete es;
  expandable_segments_.clear();
}

void DevicePool::set_memory_fraction(double fraction) {
  allowed_memory_.reset();
  if (fraction < 1.0) {
    allowed_memory_ =
        static_cast<std::size_t>(fraction * static_cast<double>(backend_.total_memory()));
  }
}

bool DevicePool::gc_active() const {
  return allowed_memory_.has_value() && options_.garbage_collection_threshold > 0.0;
}

std::uint64_t DevicePool::emit(Action action, std::uintptr_t ptr, std::size_t size,
                               std::size_t block_size, std::uintptr_t segment,
                               std::uintptr_t stream, bool cache_hit) {
  if (sink_ == nullptr) return 0;
  PoolEvent event = event_of(action, device_, size, block_size, stream);
  event.ptr = ptr;
  event.segment = segment;
  event.cache_hit = cache_hit;
  return sink_->on_pool_event(event);
}

Block* DevicePool::new_block(std::uintptr_t ptr, std::size_t size, std::uintptr_t stream,
                             BlockPool* pool) {
  Block* b = make_cached<Block>(block_nodes_, kFreshBlock);
  b->ptr = ptr;
  b->size = size;
  b->stream = stream;
  b->pool = pool;
  return b;
}

void DevicePool::delete_block(Block* block) {
  destroy_cached(block_nodes_, block);
}

void DevicePool::insert_cached(BlockPool& pool, Block* block) {
  block->gc_count_base = pool.lookups;
  block->idle_tick = idle_ticks_;
  pool.blocks.insert(block);
}

AllocResult DevicePool::malloc(std::size_t requested, std::uintptr_t stream, const AllocTag& tag) {
  AllocResult result;
  if (requested > kLargestRequest) {
    out_of_memory(requested, 0, 0, stream);
    result.status = AllocStatus::kOutOfMemory;
    return result;
  }
  process_fences();
  refused_bytes_ = 0;

  Request r;
  r.size = round_size(requested, options_);
  r.stream = stream;
  r.pool = r.size <= kSmallSize ? &small_ : &large_;
  r.alloc_size = segment_size_for(r.size, options_);
  r.expandable_active = options_.expandable_segments;

  if (!pending_.empty()) {
    Request probe = r;
    if (!get_free_block<false>(probe)) wait_for_fenced_blocks(r);
  }
  bool found = get_free_block(r);
  const bool cache_hit = found;
  if (!found) {
    if (gc_active()) garbage_collect_cached_blocks();
    // PyTorch's order: a new segment; then free oversize cached blocks and retry; then free
    // every idle segment and retry. Only out-of-memory goes on to the next step.
    found = alloc_block(r, false);
    if (!found && r.err.status == BackendStatus::kOutOfMemory) {
      found = release_available_cached_blocks(r) && alloc_block(r, false);
    }
    if (!found && r.err.status == BackendStatus::kOutOfMemory) {
      release_cached_blocks();
      found = alloc_block(r, true);
    }
  }
  if (!found) {
    if (r.err.status == BackendStatus::kError) {
      refused(requested, r.size, stream);
      result.status = AllocStatus::kBackendError;
      result.backend_error = r.err.error;
      return result;
    }
    out_of_memory(requested, r.size, refused_bytes_ != 0 ? refused_bytes_ : r.alloc_size, stream);
    result.status = AllocStatus::kOutOfMemory;
    return result;
  }

  const bool split = should_split(r.block, r.size, r.expandable_active);
  Block* block = take_found_block(r, requested, split, tag);
  // The sink's number for the event names the block, unless the caller gave one (a replay: the
  // source log's seq).
  const std::uint64_t seq =
      emit(Action::kAlloc, block->ptr, requested, block->size, block->segment, stream, cache_hit);
  if (block->alloc_seq == 0) block->alloc_seq = seq;
  result.ptr = block->ptr;
  result.block_size = block->size;
  result.cache_hit = cache_hit;
  result.handle = block;
  return result;
}

template <bool kCount>
bool DevicePool::get_free_block(Request& r) {
  BlockPool& pool = *r.pool;
  if (kCount && gc_active()) ++pool.lookups;  // ages are counted only while GC can run
  Block key = sort_key(r.stream, r.size);
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != r.stream) return false;

  if ((*it)->expandable != nullptr) {
    if (r.expandable_active) {
      // An expandable block counts as the size it can grow to (with the unbacked range after it).
      auto growable = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->expandable != nullptr && next != pool.blocks.end() &&
             (*next)->stream == r.stream && growable(*next) < growable(*it)) {
        it = next++;
      }
    } else {
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->expandable != nullptr &&
               (*it)->stream == r.stream);
      if (it == pool.blocks.end() || (*it)->stream != r.stream) return false;
    }
  }

  // The split limits' rule (split_shadows.h); the replay's shadows watch the decision.
  const bool takes = split_.takes(r.size, (*it)->size);
  if (shadows_ != nullptr) shadows_->offered(r.size, (*it)->size, takes);
  if (!takes) return false;

  r.block = *it;
  r.found = it;
  r.in_set = true;
  return true;
}

bool DevicePool::alloc_block(Request& r, bool is_retry) {
  const std::size_t size = r.alloc_size;
  if (is_retry) stats_.num_alloc_retries += 1;

  if (allowed_memory_.has_value() && reserved_ + size > *allowed_memory_) {
    r.err = BackendResult{BackendStatus::kOutOfMemory, 0};
    refused_bytes_ = size;
    return false;
  }
  if (r.expandable_active) {
    backend_failure_ = BackendResult{};
    r.block = try_allocate_expandable_block(r.stream, *r.pool, r.size);
    if (r.block == nullptr) {
      r.err =
          backend_failure_.ok() ? BackendResult{BackendStatus::kOutOfMemory, 0} : backend_failure_;
      return false;
    }
    r.err = BackendResult{};
    return true;
  }

  std::uintptr_t ptr = 0;
  const BackendResult res = backend_.allocate_segment(size, &ptr);
  note_device_answer(res, RefusalStep::kSegment, size, 0);
  if (!res.ok()) {
    if (res.status == BackendStatus::kOutOfMemory) {
      emit(Action::kSegmentRefused, 0, size, 0, 0, r.stream);
    }
    r.err = res;
    return false;
  }
  r.err = BackendResult{};
  reserved_ += size;
  r.block = new_block(ptr, size, r.stream, r.pool);
  r.block->segment = ptr;
  update(*r.pool, [&](std::size_t t) {
    stats_.segment[t].increase(1);
    stats_.reserved_bytes[t].increase(size);
  });
  if (size >= options_.max_split_size) stats_.oversize_segments.increase(1);
  stats_.num_device_alloc += 1;
  emit(Action::kSegmentAlloc, ptr, size, size, ptr, r.stream);
  return true;
}

bool DevicePool::should_split(const Block* block, std::size_t size, bool expandable_active) const {
  const std::size_t remaining = block->size - size;
  if (block->pool->is_small || expandable_active) return remaining >= kMinBlockSize;
  if (remaining <= kSmallSize) return false;
  const bool splits = split_.splits(size);
  if (shadows_ != nullptr) shadows_->split(size, splits);
  return splits;
}

Block* DevicePool::take_found_block(Request& r, std::size_t requested, bool split_remainder,
                                    const AllocTag& tag) {
  Block* block = r.block;
  BlockPool& pool = *r.pool;
  const bool already_split = block->is_split();
  // A cached block that gives its front away keeps its place in the free set when it still sorts
  // there (note "in-place keys"); otherwise it leaves the set and its remainder goes back in.
  bool remainder_in_place = false;
  if (r.in_set) {
    remainder_in_place =
        split_remainder && block->expandable == nullptr &&
        still_sorted_after_shrink(pool.blocks, r.found, block->size - r.size, block->ptr + r.size);
    if (!remainder_in_place) pool.blocks.erase(r.found);
    r.in_set = false;
  }

  if (split_remainder) {
    Block* remaining = block;
    block = new_block(remaining->ptr, r.size, r.stream, &pool);
    block->segment = remaining->segment;
    block->expandable = remaining->expandable;
    block->prev = remaining->prev;
    if (block->prev != nullptr) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->ptr += r.size;
    remaining->size -= r.size;
    if (remainder_in_place) {
      remaining->gc_count_base = pool.lookups;
      remaining->idle_tick = idle_ticks_;
    } else {
      insert_cached(pool, remaining);
    }

    if (block->expandable == nullptr) {
      if (already_split) {
        // An already split free block shrinks by the bytes handed out.
        update(pool, [&](std::size_t t) { stats_.inactive_split_bytes[t].decrease(block->size); });
      } else {
        // A whole segment is split for the first time: its remainder is inactive split memory.
        update(pool, [&](std::size_t t) {
          stats_.inactive_split_bytes[t].increase(remaining->size);
          stats_.inactive_split[t].increase(1);
        });
      }
    }
  } else if (already_split && block->expandable == nullptr) {
    update(pool, [&](std::size_t t) {
      stats_.inactive_split_bytes[t].decrease(block->size);
      stats_.inactive_split[t].decrease(1);
    });
  }

  block->allocated = true;
  block->requested_size = requested;
  block->alloc_seq = tag.seq;
  block->alloc_t_ns = tag.t_ns;
  block->alloc_tid = static_cast<std::uint32_t>(tag.tid);
  block->alloc_stack = tag.stack;
  block->holder = 0;
  active_.insert(block);
  update(pool, [&](std::size_t t) {
    stats_.allocation[t].increase(1);
    stats_.allocated_bytes[t].increase(block->size);
    stats_.active[t].increase(1);
    stats_.active_bytes[t].increase(block->size);
    stats_.requested_bytes[t].increase(requested);
  });
  if (block->size >= options_.max_split_size) stats_.oversize_allocations.increase(1);
  return block;
}

const Block* DevicePool::find_allocated_containing(std::uintptr_t ptr) const {
  if (const Block* exact = active_.find(ptr)) return exact;
  const Block* found = nullptr;
  active_.for_each([&](const Block* b) {
    if (ptr >= b->ptr && ptr < b->end()) found = b;
  });
  return found;
}

std::size_t DevicePool::pending_fence_bytes() const {
  std::size_t bytes = 0;
  for (const PendingFence& p : pending_) bytes += p.block->size;
  return bytes;
}

std::size_t DevicePool::idle_cached_bytes() const {
  const std::size_t all = static_cast<std::size_t>(StatType::kAll);
  return static_cast<std::size_t>(stats_.reserved_bytes[all].current -
                                  stats_.active_bytes[all].current);
}

void DevicePool::for_each_block(const std::function<void(const Block&)>& fn) const {
  active_.for_each([&](const Block* b) { fn(*b); });
  for (const PendingFence& p : pending_) fn(*p.block);
  for (const BlockPool* pool : {&small_, &large_}) {
    for (const Block* b : pool->blocks) fn(*b);
    for (const Block* b : pool->unmapped) fn(*b);
  }
}

}  // namespace cudapool::pool
