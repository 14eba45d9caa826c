// SPDX-License-Identifier: Apache-2.0
// tools/tune/first_look.cpp: see first_look.h.
#include "tools/tune/first_look.h"

#include <algorithm>

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

FirstLook first_look(replay::LogDecoder& decoder, std::size_t max_events,
                     std::size_t batch_events) {
  FirstLook look;
  batch_events = std::max<std::size_t>(batch_events, 1);
  for (std::size_t held = 0; held < max_events;) {
    auto batch = std::make_shared<replay::EventBatch>();
    batch->events.reserve(std::min(batch_events, max_events - held));
    if (!decoder.next_batch(batch.get(), std::min(batch_events, max_events - held))) {
      look.whole_log = true;
      return look;
    }
    held += batch->events.size();
    look.requests.add(*batch);
    look.batches.push_back(std::move(batch));
  }
  return look;
}

}  // namespace cudapool::tune
