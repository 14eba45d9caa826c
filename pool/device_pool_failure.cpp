// SPDX-License-Identifier: Apache-2.0
// pool/device_pool_failure.cpp: a request that fails (see device_pool.h): the device's answers
// to the pool's requests as they come (note_device_answer), then an out-of-memory (its state and
// cause, oom.h, and the oom event) or another device error (refusal.h, and the alloc_failed
// event). Not here: the steps that ask the device (device_pool.cpp, device_pool_expandable.cpp).
#include "pool/constants.h"
#include "pool/device_pool.h"

namespace cudapool::pool {

void DevicePool::out_of_memory(std::size_t requested, std::size_t rounded, std::size_t segment_size,
                               std::uintptr_t stream) {
  stats_.num_ooms += 1;
  OomState& s = last_oom_;
  s = OomState{};
  s.requested = requested;
  s.rounded = rounded;
  s.segment_size = segment_size;
  s.device_total = backend_.total_memory();
  std::size_t free = 0;
  s.device_free_known = backend_.free_memory(&free);
  s.device_free = s.device_free_known ? free : 0;
  s.cap = allowed_memory_.value_or(0);
  s.reserved = reserved_;
  s.large_segment_size = options_.large_segment_size;
  s.expandable = options_.expandable_segments;
  const auto all = static_cast<std::size_t>(StatType::kAll);
  s.allocated = static_cast<std::uint64_t>(stats_.allocated_bytes[all].current);
  for (const BlockPool* pool : {&small_, &large_}) {
    for (const Block* b : pool->blocks) {
      ++s.free_blocks;
      if (b->size > s.largest_free_block) s.largest_free_block = b->size;
    }
  }
  s.cause = classify_oom(s);
  if (sink_ == nullptr) return;
  PoolEvent event = event_of(Action::kOom, device_, requested, rounded, stream);
  event.oom = &last_oom_;
  sink_->on_pool_event(event);
}

void DevicePool::note_device_answer(const BackendResult& res, RefusalStep step, std::size_t bytes,
                                    std::size_t page) {
  if (res.status == BackendStatus::kOutOfMemory) refused_bytes_ = bytes;
  if (res.status != BackendStatus::kError) return;
  if (step != RefusalStep::kSegment) backend_failure_ = res;
  DeviceRefusal& f = last_refusal_;
  f = DeviceRefusal{};
  f.step = step;
  f.bytes = bytes;
  f.page_size = page;
  f.large_segment_page = page != 0 && page != kSmallBuffer && page == options_.large_segment_size;
  f.error = res.error;
}

void DevicePool::refused(std::size_t requested, std::size_t rounded, std::uintptr_t stream) {
  last_refusal_.requested = requested;
  last_refusal_.rounded = rounded;
  if (sink_ == nullptr) return;
  PoolEvent event = event_of(Action::kAllocFailed, device_, requested, rounded, stream);
  event.error = last_refusal_.error;
  sink_->on_pool_event(event);
}

}  // namespace cudapool::pool
