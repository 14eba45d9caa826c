// SPDX-License-Identifier: Apache-2.0
// tools/tune/pass.cpp: see pass.h. One mutex guards the schedule (which batches are held, each
// setting's next batch, who decodes); decoding and replaying run outside it.
#include "tools/tune/pass.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace cudapool::tune {

namespace {

class Pass {
 public:
  Pass(replay::LogDecoder& decoder, const std::vector<PassSetting>& settings,
       const PassOptions& options, std::deque<std::shared_ptr<const replay::EventBatch>> decoded,
       RequestSizes* requests)
      : decoder_(decoder),
        requests_(requests),
        batch_events_(std::max<std::size_t>(options.batch_events, 1)),
        max_batches_(std::max<std::size_t>(options.max_batches, 1)),
        next_(settings.size(), 0),
        busy_(settings.size(), false),
        ended_(options.decoded_only),
        until_parted_(options.decoded_only && options.until_parted) {
    if (!settings.empty()) batches_ = std::move(decoded);
    for (const PassSetting& setting : settings) {
      replay::ReplaySettings s;
      s.conf = setting.conf;
      s.device_memory = options.device_memory;
      s.shadows = setting.shadows;
      replayers_.push_back(std::make_unique<replay::Replayer>(s));
      replayers_.back()->start_log(decoder.tally().header);
    }
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (!decoding_ && !ended_ && held() < max_batches_) {
        decode(lock);
        continue;
      }
      const std::size_t r = lagging();
      if (r < replayers_.size()) {
        replay(lock, r);
        continue;
      }
      if (ended_ && all_done()) {
        changed_.notify_all();
        return;
      }
      changed_.wait(lock);
    }
  }

  std::vector<PassResult> results() {
    std::vector<PassResult> out;
    for (auto& r : replayers_) {
      r->end_of_log(decoder_.tally());
      out.push_back(PassResult{outcome_of(*r), r->parted()});
      r.reset();  // its pools' memory
    }
    return out;
  }

 private:
  std::size_t held() const { return batches_.size(); }

  void decode(std::unique_lock<std::mutex>& lock) {
    decoding_ = true;
    lock.unlock();
    auto batch = std::make_shared<replay::EventBatch>();
    batch->events.reserve(batch_events_);
    const bool more = decoder_.next_batch(batch.get(), batch_events_);
    if (more && requests_ != nullptr) requests_->add(*batch);
    lock.lock();
    decoding_ = false;
    if (!more) {
      ended_ = true;
    } else if (!replayers_.empty()) {
      batches_.push_back(std::move(batch));
    }
    changed_.notify_all();
  }

  // The setting furthest behind that is idle and has a batch to replay (none: size()).
  std::size_t lagging() const {
    std::size_t best = replayers_.size();
    for (std::size_t r = 0; r < replayers_.size(); ++r) {
      if (busy_[r] || next_[r] >= first_ + batches_.size()) continue;
      if (best == replayers_.size() || next_[r] < next_[best]) best = r;
    }
    return best;
  }

  bool all_done() const {
    for (std::size_t r = 0; r < replayers_.size(); ++r) {
      if (busy_[r] || next_[r] < first_ + batches_.size()) return false;
    }
    return true;
  }

  void replay(std::unique_lock<std::mutex>& lock, std::size_t r) {
    busy_[r] = true;
    const std::shared_ptr<const replay::EventBatch> batch = batches_[next_[r] - first_];
    lock.unlock();
    replayers_[r]->replay_batch(*batch);
    const bool stop = until_parted_ && !replayers_[r]->watching();
    lock.lock();
    busy_[r] = false;
    ++next_[r];
    if (stop) next_[r] = first_ + batches_.size();  // (decoded_only: no batch comes later)
    // Batches every setting has replayed are dropped.
    const std::uint64_t slowest = *std::min_element(next_.begin(), next_.end());
    while (first_ < slowest) {
      batches_.pop_front();
      ++first_;
    }
    changed_.notify_all();  // a batch to decode, a setting to take up, or the end
  }

  replay::LogDecoder& decoder_;
  RequestSizes* const requests_;
  const std::size_t batch_events_, max_batches_;
  std::vector<std::unique_ptr<replay::Replayer>> replayers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<const replay::EventBatch>> batches_;  // from batch number first_ on
  std::uint64_t first_ = 0;
  std::vector<std::uint64_t> next_;  // each setting's next batch number
  std::vector<bool> busy_;           // a worker is replaying that setting
  bool decoding_ = false;
  bool ended_;  // the decoder is at the end (or not to be read)
  const bool until_parted_;
};

}  // namespace

Outcome outcome_of(const replay::Replayer& r) {
  Outcome o;
  // Segments given back by idle release are no room made for a request.
  const bool idle_gave_back = r.counts().idle_releases != 0;
  for (int dev : r.devices()) {
    const pool::DeviceStats s = r.stats(dev);
    const auto all = static_cast<std::size_t>(pool::StatType::kAll);
    o.peak_reserved += static_cast<std::uint64_t>(s.reserved_bytes[all].peak);
    o.peak_allocated += static_cast<std::uint64_t>(s.allocated_bytes[all].peak);
    o.mapped_bytes += static_cast<std::uint64_t>(s.reserved_bytes[all].allocated);
    o.device_allocs += static_cast<std::uint64_t>(s.num_device_alloc);
    o.device_frees += static_cast<std::uint64_t>(s.num_device_free);
    o.retries += static_cast<std::uint64_t>(s.num_alloc_retries);
    o.ooms += static_cast<std::uint64_t>(s.num_ooms);
    const pool::DevicePool& p = r.pool(dev);
    const bool gc = p.allowed_memory() && p.options().garbage_collection_threshold > 0.0;
    if (s.num_sync_all_streams == 0 && !gc && !idle_gave_back) {
      // Every segment freed was freed to make room.
      o.oversize_releases += static_cast<std::uint64_t>(s.num_device_free);
    }
    if (o.device_memory == 0) {
      o.device_memory = r.device_memory(dev);
      o.memory_limit = p.allowed_memory().value_or(o.device_memory);
    }
  }
  const replay::ReplayCounts& counts = r.counts();
  o.problems = counts.malformed_lines + counts.unknown_frees + counts.duplicate_allocs;
  // Summed over the pools by the replay itself.
  o.mean_reserved = r.held().mean_reserved(r.reserved_now());
  o.span_ns = r.held().span_ns();
  o.idle_releases = counts.idle_releases;
  o.idle_released_bytes = counts.idle_released_bytes;
  return o;
}

std::vector<PassResult> replay_pass(replay::LogDecoder& decoder,
                                    const std::vector<PassSetting>& settings,
                                    const PassOptions& options,
                                    std::deque<std::shared_ptr<const replay::EventBatch>> decoded,
                                    RequestSizes* requests) {
  Pass pass(decoder, settings, options, std::move(decoded), requests);
  std::vector<std::thread> workers;
  for (int i = 1; i < options.threads; ++i) workers.emplace_back([&] { pass.work(); });
  pass.work();
  for (std::thread& t : workers) t.join();
  return pass.results();
}

std::vector<Outcome> replay_pass(replay::LogDecoder& decoder, const std::vector<std::string>& confs,
                                 const PassOptions& options,
                                 std::deque<std::shared_ptr<const replay::EventBatch>> decoded,
                                 RequestSizes* requests) {
  std::vector<PassSetting> settings;
  for (const std::string& conf : confs) settings.push_back(PassSetting{conf, {}});
  std::vector<Outcome> out;
  for (const PassResult& r : replay_pass(decoder, settings, options, std::move(decoded), requests))
    out.push_back(r.outcome);
  return out;
}

}  // namespace cudapool::tune
