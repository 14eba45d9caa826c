// SPDX-License-Identifier: Apache-2.0
// tools/tune/first_look.cpp: see first_look.h.
#include "tools/tune/first_look.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace cudapool::tune {

void RequestSizes::add(const replay::EventBatch& batch) {
  for (const replay::RecordedEvent& r : batch.events) {
    const replay::LogEvent& e = r.event;
    if (e.kind != replay::EventKind::kAlloc && e.kind != replay::EventKind::kOom) continue;
    if (e.kind == replay::EventKind::kAlloc && e.size > largest) {
      largest = e.size;
      ++changes_;
    }
    if (!known || e.size == last_) continue;
    last_ = e.size;
    if (!sizes.insert(e.size).second) continue;
    ++changes_;
    if (sizes.size() > kMaxScannedSizes) {
      known = false;
      sizes = {};
    }
  }
}

namespace {

// The bytes requested and not yet freed, event by event (pointers per device and context).
class LiveRequests {
 public:
  void add(const replay::EventBatch& batch) {
    for (const replay::RecordedEvent& r : batch.events) {
      const replay::LogEvent& e = r.event;
      const std::uint64_t pool =
          static_cast<std::uint64_t>(e.device) << 16 | static_cast<std::uint64_t>(e.ctx);
      if (e.kind == replay::EventKind::kAlloc) {
        // A duplicate alloc (the replay skips it): the first one stays.
        if (!live_.try_emplace(Key{pool, e.ptr}, e.size).second) continue;
        total_ += e.size;
        peak_ = std::max(peak_, total_);
      } else if (e.kind == replay::EventKind::kFree) {
        const auto it = live_.find(Key{pool, e.ptr});
        if (it == live_.end()) continue;
        total_ -= it->second;
        live_.erase(it);
      } else if (e.kind == replay::EventKind::kContextDropped) {
        std::erase_if(live_, [&](const auto& kv) {
          if (kv.first.pool != pool) return false;
          total_ -= kv.second;
          return true;
        });
      }
    }
  }
  std::uint64_t peak() const { return peak_; }

 private:
  struct Key {
    std::uint64_t pool, ptr;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>()(k.ptr * 0x9e3779b97f4a7c15ull ^ k.pool);
    }
  };
  std::unordered_map<Key, std::uint64_t, Hash> live_;
  std::uint64_t total_ = 0, peak_ = 0;
};

}  // namespace

FirstLook first_look(replay::LogDecoder& decoder, std::size_t max_events,
                     std::size_t batch_events) {
  FirstLook look;
  LiveRequests live;
  batch_events = std::max<std::size_t>(batch_events, 1);
  for (std::size_t held = 0; held < max_events;) {
    auto batch = std::make_shared<replay::EventBatch>();
    batch->events.reserve(std::min(batch_events, max_events - held));
    if (!decoder.next_batch(batch.get(), std::min(batch_events, max_events - held))) {
      look.whole_log = true;
      break;
    }
    held += batch->events.size();
    look.requests.add(*batch);
    live.add(*batch);
    look.batches.push_back(std::move(batch));
  }
  look.peak_requested = live.peak();
  return look;
}

}  // namespace cudapool::tune
