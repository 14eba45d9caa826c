// SPDX-License-Identifier: Apache-2.0
// pool/device_pool_expandable.cpp: expandable segments (PyTorch's expandable_segments:True). A
// segment is a reservation of address space for 9/8 of the device, backed page by page (2 MiB pages
// for the small pool, large_segment_size for the large pool) as blocks need them, and unbacked
// again when memory is released; the large pool's pages lie in driver allocations of up to
// expandable_handle_mb (one page each by default), and go back only in whole ones. See
// device_pool.h.
#include <algorithm>
#include <limits>

#include "pool/constants.h"
#include "pool/device_pool.h"
#include "pool/rounding.h"

namespace cudapool::pool {

namespace {

void splice(Block* block, Block* before, Block* after) {
  block->prev = before;
  if (before != nullptr) before->next = block;
  block->next = after;
  if (after != nullptr) after->prev = block;
}

bool allocatable(const Block* b) {
  return b != nullptr && !b->allocated && b->fence == 0;
}

}  // namespace

Block* DevicePool::find_expandable_block(std::uintptr_t stream, BlockPool& pool, std::size_t size) {
  // The lowest address where free and unbacked blocks together hold `size` bytes.
  auto has_room = [size](const Block* b) {
    std::size_t bytes = 0;
    while (bytes < size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= size;
  };
  Block key = sort_key(stream);
  for (auto it = pool.unmapped.lower_bound(&key);
       it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    Block* candidate = *it;
    if (allocatable(candidate->prev)) candidate = candidate->prev;
    if (has_room(candidate)) return candidate;
  }

  // None: reserve a new segment.
  const std::size_t page = pool.is_small ? kSmallBuffer : options_.large_segment_size;
  const std::size_t total = backend_.total_memory();
  const std::size_t want = total + total / 8;
  // Whole pages, without overflow for any page size (one page when it alone exceeds `want`).
  const std::size_t pages = std::max<std::size_t>(1, want / page + (want % page != 0 ? 1 : 0));
  if (pages > std::numeric_limits<std::size_t>::max() / page) {
    // No device has such an address range: refused as out of memory, never asked.
    note_device_answer(BackendResult{BackendStatus::kOutOfMemory, 0}, RefusalStep::kAddressRange,
                       std::numeric_limits<std::size_t>::max(), page);
    return nullptr;
  }
  std::uintptr_t base = 0;
  const BackendResult res = backend_.reserve_address_space(pages * page, &base);
  note_device_answer(res, RefusalStep::kAddressRange, pages * page, page);
  if (!res.ok()) return nullptr;
  auto* es = new ExpandableSegment;
  es->base = base;
  es->page_size = page;
  es->pages = pages;
  es->stream = stream;
  if (!pool.is_small) es->handle_pages = large_handle_pages(options_);
  expandable_segments_.push_back(es);
  Block* candidate = new_block(base, es->size(), stream, &pool);
  candidate->mapped = false;
  candidate->expandable = es;
  candidate->segment = base;
  pool.unmapped.insert(candidate);
  return candidate;
}

bool DevicePool::map_block(Block* to_map, std::size_t size) {
  ExpandableSegment& es = *to_map->expandable;
  const std::size_t begin = (to_map->ptr - es.base) / es.page_size;
  const std::size_t end = (to_map->ptr + size - es.base + es.page_size - 1) / es.page_size;
  if (begin == end) return false;
  const std::uintptr_t mapped_ptr = es.base + begin * es.page_size;
  const std::size_t mapped_size = (end - begin) * es.page_size;
  // Handles of handle_pages pages from the first page up, the last one smaller.
  const BackendResult res =
      backend_.map_pages(mapped_ptr, mapped_size, es.handle_pages * es.page_size);
  note_device_answer(res, RefusalStep::kPages, mapped_size, es.page_size);
  if (!res.ok()) {
    if (res.status == BackendStatus::kOutOfMemory) {
      emit(Action::kSegmentRefused, mapped_ptr, mapped_size, 0, es.base, es.stream);
    }
    return false;
  }
  if (es.handle_pages > 1) {
    for (std::size_t first = begin; first < end; first += es.handle_pages) {
      es.handles.emplace_hint(es.handles.end(), first, std::min(es.handle_pages, end - first));
    }
  }

  BlockPool& pool = *to_map->pool;
  erase_block(pool.unmapped, to_map);
  to_map->mapped = true;
  if (mapped_size < to_map->size) {
    Block* rest =
        new_block(to_map->ptr + mapped_size, to_map->size - mapped_size, to_map->stream, &pool);
    rest->mapped = false;
    rest->expandable = to_map->expandable;
    rest->segment = to_map->segment;
    splice(rest, to_map, to_map->next);
    pool.unmapped.insert(rest);
    to_map->size = mapped_size;
  }
  try_merge_blocks(to_map, to_map->prev, pool);
  try_merge_blocks(to_map, to_map->next, pool);
  insert_cached(pool, to_map);

  reserved_ += mapped_size;
  update(pool, [&](std::size_t t) { stats_.reserved_bytes[t].increase(mapped_size); });
  stats_.num_device_alloc += 1;
  emit(Action::kSegmentMap, mapped_ptr, mapped_size, mapped_size, to_map->segment, to_map->stream);
  return true;
}

Block* DevicePool::try_allocate_expandable_block(std::uintptr_t stream, BlockPool& pool,
                                                 std::size_t size) {
  Block* candidate = find_expandable_block(stream, pool, size);
  if (candidate == nullptr) return nullptr;
  // candidate is: unbacked -> ..., or free -> unbacked -> ...
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size))) return nullptr;
  while (candidate->size < size) {
    // free -> unbacked: back part of the next range; it absorbs candidate.
    const std::size_t missing = size - candidate->size;
    Block* next = candidate->next;
    if (!map_block(next, std::min(missing, next->size))) return nullptr;
    candidate = next;
  }
  erase_block(pool.blocks, candidate);
  return candidate;
}

std::pair<std::size_t, std::size_t> DevicePool::unmappable_pages(const Block* block,
                                                                 std::size_t most) const {
  const ExpandableSegment& es = *block->expandable;
  // Only pages wholly inside the block can be unbacked, and of those only whole handles: a handle
  // that reaches past either end of the block stays. The block is backed: every page inside it
  // lies in a handle.
  std::size_t begin = (block->ptr - es.base + es.page_size - 1) / es.page_size;
  std::size_t end = (block->end() - es.base) / es.page_size;
  if (begin >= end) return {end, end};
  const std::size_t most_pages = most / es.page_size;
  if (es.handle_pages == 1) {
    if (end - begin > most_pages) begin = end - most_pages;
    return {begin, end};
  }
  // The handle holding page p: the last one that starts at or below it (a backed page has one;
  // were none there, nothing would be given back rather than a page the pool does not know).
  if (es.handles.empty() || es.handles.begin()->first > begin) return {end, end};
  const auto holding = [&](std::size_t p) { return std::prev(es.handles.upper_bound(p)); };
  if (const auto h = holding(begin); h->first != begin) begin = h->first + h->second;
  if (begin >= end) return {end, end};
  auto top = holding(end - 1);
  if (top->first + top->second != end) {
    end = top->first;
    if (begin >= end) return {end, end};
    --top;
  }
  // The highest handles that fit in `most`, whole.
  std::size_t low = end;
  for (auto h = top; h->first >= begin && end - h->first <= most_pages; --h) {
    low = h->first;
    if (h == es.handles.begin()) break;
  }
  return {low, end};
}

void DevicePool::unmap_block(Block* block, std::size_t most) {
  ExpandableSegment& es = *block->expandable;
  // The highest whole handles when `most` leaves out some. The low part stays mapped: the segment
  // stays one backed run from its base, the pages unbacked join the unbacked rest above them (one
  // range, not a hole between two backed ones), and a request larger than the part kept grows it
  // upwards, mapping only what is missing (find_expandable_block: free -> unbacked), as PyTorch's
  // segments grow.
  const auto [begin, end] = unmappable_pages(block, most);
  if (begin >= end) return;
  const std::uintptr_t unmapped_ptr = es.base + begin * es.page_size;
  const std::size_t unmapped_size = (end - begin) * es.page_size;
  backend_.unmap_pages(unmapped_ptr, unmapped_size, es.page_size);
  es.handles.erase(es.handles.lower_bound(begin), es.handles.lower_bound(end));

  BlockPool& pool = *block->pool;
  erase_block(pool.blocks, block);
  const std::size_t before = unmapped_ptr - block->ptr;
  if (before > 0) {
    Block* head = new_block(block->ptr, before, block->stream, &pool);
    head->expandable = block->expandable;
    head->segment = block->segment;
    splice(head, block->prev, block);
    insert_cached(pool, head);
    head->idle_tick = block->idle_tick;  // what is left of an unused range stays as unused
  }
  const std::size_t after = block->size - (before + unmapped_size);
  if (after > 0) {
    Block* tail = new_block(unmapped_ptr + unmapped_size, after, block->stream, &pool);
    tail->expandable = block->expandable;
    tail->segment = block->segment;
    splice(tail, block, block->next);
    insert_cached(pool, tail);
    tail->idle_tick = block->idle_tick;
  }
  block->ptr = unmapped_ptr;
  block->size = unmapped_size;
  block->mapped = false;
  try_merge_blocks(block, block->prev, pool);
  try_merge_blocks(block, block->next, pool);
  pool.unmapped.insert(block);

  reserved_ -= unmapped_size;
  update(pool, [&](std::size_t t) { stats_.reserved_bytes[t].decrease(unmapped_size); });
  stats_.num_device_free += 1;
  emit(Action::kSegmentUnmap, unmapped_ptr, unmapped_size, unmapped_size, block->segment,
       block->stream);
}

void DevicePool::release_expandable_segment(Block* block) {
  ExpandableSegment* es = block->expandable;
  expandable_segments_.erase(
      std::find(expandable_segments_.begin(), expandable_segments_.end(), es));
  erase_block(block->pool->unmapped, block);
  backend_.release_address_space(es->base, es->size());
  delete es;
  delete_block(block);
}

}  // namespace cudapool::pool
