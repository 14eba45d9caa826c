// SPDX-License-Identifier: Apache-2.0
// tools/replay/replayer_pools.cpp: the Replayer's pools (replayer.h): made on a device's first
// event, each in an address range of its own; at most kMaxPools alive, of the devices the header
// lists; dropped with their context; and the notes that sum up the events skipped for these
// limits. The events themselves: replayer.cpp.
#include <iterator>
#include <stdexcept>

#include "tools/replay/replayer.h"

namespace cudapool::replay {

Replayer::Device& Replayer::other_device(PoolKey key) {
  const int id = device_of(key);
  auto it = devices_.find(key);
  if (it != devices_.end()) {
    last_key_ = key;
    last_device_ = &it->second;
    return it->second;
  }
  std::uint64_t memory = kDefaultDeviceMemory;
  if (settings_.device_memory) {
    memory = *settings_.device_memory;
  } else if (auto h = header_.device_memory.find(id); h != header_.device_memory.end()) {
    memory = h->second;
  }
  if (memory > kMaxDeviceMemory) {
    problem(line_, "device " + std::to_string(id) + " has " + std::to_string(memory) +
                       " bytes, more than the replay simulates: simulated with 16 TiB");
    memory = kMaxDeviceMemory;
  }
  // The lowest free slot: admitted() keeps the pools at kMaxPools at most.
  std::size_t slot = 0;
  while (slot + 1 < kMaxPools && slots_.test(slot)) ++slot;
  slots_.set(slot);
  Device& d = devices_[key];
  d.slot = slot;
  d.backend = std::make_unique<pool::SimulatedBackend>(memory, kPoolSpaceBase + slot * kPoolSpan,
                                                       kPoolSpan);
  // Segments the log gives no address for go where the driver would put them (placement.h).
  d.backend->place_like_the_driver(true);
  // By handle: the replay keeps each block's handle in `live`, so a free needs no lookup by
  // address.
  d.pool = std::make_unique<pool::DevicePool>(options_, *d.backend, id, settings_.write_log,
                                              pool::Tracking::kByHandle);
  if (shadows_) d.pool->watch(shadows_.get());
  last_key_ = key;
  last_device_ = &d;
  return d;
}

void Replayer::note_once(std::size_t& index, std::uint64_t line_number, std::string what) {
  if (index != kNotNoted) return;
  index = problems_.size() < kMaxProblemsKept ? problems_.size() : kNotNoted - 1;
  problem(line_number, std::move(what));
}

bool Replayer::admitted(std::uint64_t line_number, const LogEvent& e) {
  // The pool of the last event was admitted, and the header's list does not change.
  if (key_of(e.device, e.ctx) == last_key_) return true;
  const std::set<int>& listed = header_.listed_devices;
  if (!listed.empty() && listed.count(e.device) == 0) {
    ++counts_.events_of_unlisted_devices;
    if (unlisted_seen_.empty()) unlisted_seen_.resize(kDeviceLimit);
    if (!unlisted_seen_[static_cast<std::size_t>(e.device)]) {
      unlisted_seen_[static_cast<std::size_t>(e.device)] = true;
      ++unlisted_devices_;
    }
    note_once(unlisted_problem_, line_number, "");  // worded at finish(), with the totals
    return false;
  }
  if (e.kind == EventKind::kContextDropped) return true;  // makes no pool
  const PoolKey key = key_of(e.device, e.ctx);
  if (devices_.size() < kMaxPools || devices_.count(key) != 0) return true;
  ++counts_.events_over_pool_limit;
  note_once(pool_limit_problem_, line_number, "");
  return false;
}

void Replayer::drop_pool(PoolKey key) {
  auto it = devices_.find(key);
  if (it == devices_.end()) return;
  dropped_scripted_segments_ += it->second.backend->scripted_segments();
  dropped_script_dropped_ |= it->second.backend->script_dropped();
  dropped_address_refusals_ += it->second.backend->address_refusals();
  slots_.reset(it->second.slot);
  devices_.erase(it);
  last_key_ = -1;
  last_device_ = nullptr;
}

void Replayer::word_skip_notes() {
  if (unlisted_problem_ < problems_.size()) {
    std::string list;
    std::size_t n = 0;
    for (const int id : header_.listed_devices) {
      if (n++ == 8) {
        list += ", ...";
        break;
      }
      if (!list.empty()) list += ", ";
      list += std::to_string(id);
    }
    problems_[unlisted_problem_].what =
        "an event of a device the header does not list (its devices: " + list +
        "): skipped, as are all such events: " +
        std::to_string(counts_.events_of_unlisted_devices) + " events of " +
        std::to_string(unlisted_devices_) + " devices";
  }
  if (pool_limit_problem_ < problems_.size()) {
    problems_[pool_limit_problem_].what =
        "an event of a pool beyond " + std::to_string(kMaxPools) +
        " pools alive at once (the shim pools at most " + std::to_string(kMaxPools) +
        " contexts): skipped, as are all such events: " +
        std::to_string(counts_.events_over_pool_limit) + " events";
  }
}

std::vector<int> Replayer::devices() const {
  std::vector<int> ids;
  for (const auto& [key, d] : devices_) {
    if (ids.empty() || ids.back() != device_of(key)) ids.push_back(device_of(key));
  }
  return ids;
}

const Replayer::Device& Replayer::first_pool_of(int device) const {
  auto it = devices_.lower_bound(key_of(device, 0));
  if (it == devices_.end() || device_of(it->first) != device) {
    throw std::out_of_range("replay: no pool of device " + std::to_string(device));
  }
  return it->second;
}

const pool::DevicePool& Replayer::pool(int device) const {
  return *first_pool_of(device).pool;
}

pool::DeviceStats Replayer::stats(int device) const {
  // As the shim's summary: the first pool's statistics (settings such as max_split_size
  // included), the counts of the others added.
  pool::DeviceStats sum = first_pool_of(device).pool->stats();
  for (auto it = std::next(devices_.lower_bound(key_of(device, 0)));
       it != devices_.end() && device_of(it->first) == device; ++it) {
    pool::add_pool_stats(sum, it->second.pool->stats());
  }
  return sum;
}

std::uint64_t Replayer::device_memory(int device) const {
  return first_pool_of(device).backend->total_memory();
}

}  // namespace cudapool::replay
