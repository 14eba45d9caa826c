// SPDX-License-Identifier: Apache-2.0
// pool/simulated_backend.cpp: see simulated_backend.h.
#include "pool/simulated_backend.h"

#include <iterator>

namespace cudapool::pool {

namespace {
constexpr std::uintptr_t kRangeAlignment = 2 * 1024 * 1024;
}

SimulatedBackend::SimulatedBackend(std::size_t device_memory, std::uintptr_t first_address,
                                   std::uintptr_t span)
    :  // Driver-placed chunks come down from the middle (8 TiB above first_address for the
       // default span) to the quarter; the fresh ranges go up from first_address to it.
      placement_(first_address + span / 2, first_address + span / 4),
      capacity_(device_memory),
      first_(first_address),
      span_(span),
      next_address_(first_address),
      fresh_end_(first_address + span / 4) {}

bool SimulatedBackend::take(std::size_t bytes) {
  if (bytes > capacity_ - in_use_) return false;
  in_use_ += bytes;
  if (in_use_ > peak_in_use_) peak_in_use_ = in_use_;
  return true;
}

bool SimulatedBackend::next_range(std::size_t bytes, std::uintptr_t* ptr) {
  const std::uintptr_t room = fresh_end_ - next_address_;
  if (bytes == 0 || bytes > room) {
    ++address_refusals_;
    return false;
  }
  *ptr = next_address_;
  // Leave a gap so that no two ranges touch: a merge across segments would show as a bug.
  const std::uintptr_t step = (bytes + 2 * kRangeAlignment - 1) / kRangeAlignment * kRangeAlignment;
  next_address_ = step < room ? next_address_ + step : fresh_end_;
  return true;
}

BackendResult SimulatedBackend::forced_failure() {
  if (forced_failures_ == 0) return BackendResult{};
  --forced_failures_;
  return forced_result_;
}

void SimulatedBackend::script_segment_address(std::uintptr_t ptr, std::size_t bytes) {
  if (!script_dropped_) script_.emplace_back(ptr, bytes);
}

bool SimulatedBackend::scriptable(std::uintptr_t ptr, std::size_t bytes) const {
  if (ptr == 0 || bytes == 0 || ptr + bytes < ptr) return false;   // 0, or wraps past 2^64
  if (ptr < first_ + span_ && ptr + bytes > first_) return false;  // this backend's own range
  return !overlaps_segment(ptr, bytes);
}

bool SimulatedBackend::overlaps_segment(std::uintptr_t ptr, std::size_t bytes) const {
  auto it = segments_.upper_bound(ptr);
  if (it != segments_.end() && it->first < ptr + bytes) return true;
  if (it == segments_.begin()) return false;
  --it;
  return it->first + it->second > ptr;
}

bool SimulatedBackend::refused_by_script(std::size_t bytes) {
  if (refusals_next_ >= refusals_.size()) return false;
  if (refusals_[refusals_next_] != bytes) {  // the replay went another way
    refusals_.clear();
    refusals_next_ = 0;
    return false;
  }
  ++refusals_next_;
  ++refusals_used_;
  if (refusals_next_ == refusals_.size()) {
    refusals_.clear();
    refusals_next_ = 0;
  }
  return true;
}

void SimulatedBackend::drop_refusals() {
  refusals_.clear();
  refusals_next_ = 0;
}

BackendResult SimulatedBackend::allocate_segment(std::size_t bytes, std::uintptr_t* ptr) {
  if (BackendResult forced = forced_failure(); !forced.ok()) return forced;
  if (refused_by_script(bytes)) return BackendResult{BackendStatus::kOutOfMemory, 0};
  if (bytes > capacity_ - in_use_) return BackendResult{BackendStatus::kOutOfMemory, 0};
  std::uintptr_t address = 0;
  if (script_next_ < script_.size()) {
    const auto [scripted, size] = script_[script_next_];
    if (size == bytes && scriptable(scripted, bytes)) {
      ++script_next_;
      ++scripted_used_;
      address = scripted;
    } else {
      script_dropped_ = true;
      script_.clear();
      script_next_ = 0;
    }
  }
  if (address == 0 && driver_like_) {
    address = placement_.place(bytes);
    if (address == 0) {
      ++address_refusals_;
      return BackendResult{BackendStatus::kOutOfMemory, 0};
    }
    placed_.insert(address);
  } else if (address == 0 && !next_range(bytes, &address)) {
    return BackendResult{BackendStatus::kOutOfMemory, 0};
  }
  take(bytes);
  *ptr = address;
  segments_[address] = bytes;
  ++segment_allocs_;
  return BackendResult{};
}

void SimulatedBackend::free_segment(std::uintptr_t ptr, std::size_t bytes) {
  auto it = segments_.find(ptr);
  if (it == segments_.end() || it->second != bytes) {
    ++misuse_;
    return;
  }
  segments_.erase(it);
  if (placed_.erase(ptr) != 0) placement_.release(ptr, bytes);
  in_use_ -= bytes;
  ++segment_frees_;
}

BackendResult SimulatedBackend::reserve_address_space(std::size_t bytes, std::uintptr_t* ptr) {
  if (!next_range(bytes, ptr)) return BackendResult{BackendStatus::kOutOfMemory, 0};
  reservations_[*ptr] = bytes;
  return BackendResult{};
}

void SimulatedBackend::release_address_space(std::uintptr_t ptr, std::size_t bytes) {
  auto it = reservations_.find(ptr);
  if (it == reservations_.end() || it->second != bytes) {
    ++misuse_;
    return;
  }
  // Every page inside must have been unbacked first.
  if (mapped_overlaps(ptr, ptr + bytes)) ++misuse_;
  reservations_.erase(it);
}

BackendResult SimulatedBackend::map_pages(std::uintptr_t ptr, std::size_t bytes,
                                          std::size_t handle_size) {
  if (BackendResult forced = forced_failure(); !forced.ok()) return forced;
  if (refused_by_script(bytes)) return BackendResult{BackendStatus::kOutOfMemory, 0};
  if (!take(bytes)) return BackendResult{BackendStatus::kOutOfMemory, 0};
  const std::uintptr_t end = ptr + bytes;
  if (bytes == 0) return BackendResult{};
  if (end < ptr || handle_size == 0 || mapped_overlaps(ptr, end)) {  // a page mapped twice
    ++misuse_;
    return BackendResult{};
  }
  backed_pages_ += (bytes + handle_size - 1) / handle_size;
  runs_[ptr] = MappedRun{end, handle_size};
  return BackendResult{};
}

bool SimulatedBackend::mapped_overlaps(std::uintptr_t ptr, std::uintptr_t end) const {
  auto it = runs_.upper_bound(ptr);
  if (it != runs_.begin() && std::prev(it)->second.end > ptr) return true;
  return it != runs_.end() && it->first < end;
}

void SimulatedBackend::unmap_pages(std::uintptr_t ptr, std::size_t bytes, std::size_t) {
  const std::uintptr_t end = ptr + bytes;
  if (bytes == 0) return;
  // The range must hold whole handles, every byte of it mapped: it starts and ends on handle
  // boundaries of the runs it crosses, and those runs follow each other without a gap.
  auto boundary = [](std::uintptr_t at, std::uintptr_t start, const MappedRun& run) {
    return at == run.end || (at - start) % run.handle == 0;
  };
  auto it = runs_.upper_bound(ptr);
  if (end < ptr || it == runs_.begin() || std::prev(it)->second.end <= ptr) {
    ++misuse_;
    return;
  }
  --it;
  if (!boundary(ptr, it->first, it->second)) {
    ++misuse_;
    return;
  }
  auto last = it;
  while (last->second.end < end) {
    auto next = std::next(last);
    if (next == runs_.end() || next->first != last->second.end) {
      ++misuse_;
      return;
    }
    last = next;
  }
  if (!boundary(end, last->first, last->second)) {
    ++misuse_;
    return;
  }
  // Split the first and last runs at the range's ends; every handle between goes.
  auto handles = [](std::uintptr_t from, std::uintptr_t to, std::uintptr_t start,
                    const MappedRun& run) {
    const std::uintptr_t h = run.handle;
    return (to - start + h - 1) / h - (from - start) / h;
  };
  std::vector<std::pair<std::uintptr_t, MappedRun>> kept;
  for (auto r = it;; ++r) {
    const std::uintptr_t from = std::max(ptr, r->first);
    const std::uintptr_t to = std::min(end, r->second.end);
    backed_pages_ -= handles(from, to, r->first, r->second);
    if (r->first < from) kept.emplace_back(r->first, MappedRun{from, r->second.handle});
    if (to < r->second.end) kept.emplace_back(to, r->second);
    if (r == last) break;
  }
  runs_.erase(it, std::next(last));
  for (const auto& [start, run] : kept) runs_[start] = run;
  in_use_ -= bytes;
}

std::uint64_t SimulatedBackend::fence_next_free() {
  scripted_fence_ = next_fence_++;
  return scripted_fence_;
}

std::uint64_t SimulatedBackend::fence_after_free(std::uintptr_t, std::size_t, std::uintptr_t) {
  std::uint64_t fence = scripted_fence_;  // the fence the replay asked for, if any
  scripted_fence_ = 0;
  if (fence == 0) {
    if (!fences_enabled_) return 0;
    fence = next_fence_++;
  }
  live_fences_.insert(fence);
  return fence;
}

bool SimulatedBackend::fence_passed(std::uint64_t fence) {
  if (live_fences_.count(fence) == 0) ++misuse_;
  return fences_complete_ || passed_fences_.count(fence) != 0 || waited_out_.count(fence) != 0;
}

bool SimulatedBackend::fence_wait_for(std::uint64_t fence, std::uint64_t budget_ns) {
  if (live_fences_.count(fence) == 0) ++misuse_;
  ++bounded_waits_;
  last_wait_budget_ = budget_ns;
  if (fence_passed(fence)) return true;
  if (fence_wait_cost_ == kNever || fence_wait_cost_ > budget_ns) return false;
  // Tickets pass in order: waiting for one passes every earlier live fence too.
  for (std::uint64_t f : live_fences_) {
    if (f <= fence) waited_out_.insert(f);
  }
  return true;
}

bool SimulatedBackend::fence_wait(std::uint64_t fence) {
  if (live_fences_.count(fence) == 0) ++misuse_;
  ++fences_waited_;
  return true;
}

void SimulatedBackend::fence_release(std::uint64_t fence) {
  if (live_fences_.erase(fence) == 0) ++misuse_;
  passed_fences_.erase(fence);
  waited_out_.erase(fence);
}

void SimulatedBackend::fail_next_allocations(int count, BackendStatus status, int error) {
  forced_failures_ = count;
  forced_result_ = BackendResult{status, error};
}

}  // namespace cudapool::pool
