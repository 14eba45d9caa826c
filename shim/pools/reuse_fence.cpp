// SPDX-License-Identifier: Apache-2.0
// shim/pools/reuse_fence.cpp: see reuse_fence.h. The orderings: a free takes the open epoch's
// ticket; a close first moves frees to the next epoch (so every free of the closing epoch happened
// before the close reads the streams' state), then reads which streams had work, then records the
// barrier and the marks. The work bits and counters the hooks write are read here with
// sequentially consistent loads after that step, and the hooks write them after the work was
// queued, before they return: work the program queued before a free is seen by every close after
// it.
#include "shim/pools/reuse_fence.h"

#include <algorithm>

#include "shim/driver/real_driver.h"
#include "shim/pools/context_scope.h"
#include "shim/pools/pool_slots.h"
#include "shim/pools/stream_capture.h"
#include "shim/support/clock.h"

namespace cudapool::shim {

namespace {

bool capturing() {
  return captures_in_progress().load(std::memory_order_relaxed) != 0;
}

void raise_to(std::atomic<std::uint64_t>& word, std::uint64_t value) {
  std::uint64_t seen = word.load(std::memory_order_relaxed);
  while (seen < value && !word.compare_exchange_weak(seen, value, std::memory_order_seq_cst)) {
  }
}

}  // namespace

ReuseFence::ReuseFence(CUcontext context, config::ReuseFence mode, int pool_slot)
    : context_(context), mode_(mode), slot_(pool_slot) {}

bool ReuseFence::quiet() const {
  if (mode_ == config::ReuseFence::kNone) return true;
  if (mode_ == config::ReuseFence::kSync) return false;
  const std::uint64_t b = bit();
  if (b == 0 || pool_count() > 1 || untracked_nonblocking()) return false;
  if (closing_.load(std::memory_order_seq_cst)) return false;
  if ((g_side_work_mask.load(std::memory_order_seq_cst) & b) != 0) return false;
  if (has_nonblocking_.load(std::memory_order_acquire)) {
    // Work on the legacy stream before the free is not ordered before a non-blocking stream.
    if ((g_legacy_work_mask.load(std::memory_order_seq_cst) & b) != 0) return false;
    if (n_work_.load(std::memory_order_seq_cst)) return false;
  }
  return last_closed_.load(std::memory_order_acquire) <=
         passed_through_.load(std::memory_order_acquire);
}

std::uint64_t ReuseFence::ticket_for_free() {
  switch (mode_) {
    case config::ReuseFence::kNone:
      return 0;
    case config::ReuseFence::kSync:
      if (!capturing()) {
        // What the driver's own cuMemFree does: wait for the whole device.
        ContextScope scope(context_);
        real().cuCtxSynchronize();
        return 0;
      }
      break;  // during a capture nothing may wait: the block takes the auto route
    case config::ReuseFence::kAuto:
      break;
  }
  if (quiet()) return 0;
  return open_id_.load(std::memory_order_seq_cst);
}

CUevent ReuseFence::take_event() {
  if (!spare_events_.empty()) {
    CUevent e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  if (real().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
  return e;
}

bool ReuseFence::record(CUevent event, CUstream stream) {
  return event != nullptr && real().cuEventRecord(event, stream) == CUDA_SUCCESS;
}

bool ReuseFence::close_open_epoch() {
  if (capturing()) return false;  // no legacy-stream work may be queued during a capture
  closing_.store(true, std::memory_order_seq_cst);
  const std::uint64_t id = open_id_.fetch_add(1, std::memory_order_seq_cst);
  const std::uint64_t b = bit();
  const bool side = b == 0 || (g_side_work_mask.fetch_and(~b, std::memory_order_seq_cst) & b);
  const bool legacy = b == 0 || (g_legacy_work_mask.fetch_and(~b, std::memory_order_seq_cst) & b);
  const bool nwork = n_work_.exchange(false, std::memory_order_seq_cst);
  const bool untracked = untracked_nonblocking();
  const bool has_n = has_nonblocking_.load(std::memory_order_relaxed) || untracked;
  Epoch epoch;
  epoch.id = id;

  // Non-blocking streams, before the barrier (a join must be queued before it to be covered).
  std::vector<std::size_t> to_mark;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    NonBlocking& s = streams_[i];
    const std::uint64_t need = s.entry->need_record.load(std::memory_order_seq_cst);
    if (need == 0) continue;                                                // never had work
    if (need <= s.entry->joined.load(std::memory_order_seq_cst)) continue;  // joined: barrier
    if (s.mark_record != 0 && need <= s.mark_record) {                      // its mark covers it
      if (!s.mark_done) epoch.waits.push_back(s.mark);
      continue;
    }
    to_mark.push_back(i);
  }

  ContextScope scope(context_);
  bool ok = true;
  const bool need_barrier = pool_count() > 1 || side || untracked || (has_n && (legacy || nwork));
  if (need_barrier) {
    CUevent barrier = barrier_event_.load(std::memory_order_relaxed);
    if (barrier == nullptr) {
      barrier = take_event();
      barrier_event_.store(barrier, std::memory_order_release);
    }
    if (record(barrier, CU_STREAM_LEGACY)) {
      const std::uint64_t g = gen_.fetch_add(1, std::memory_order_acq_rel) + 1;
      // Blocks safe by this barrier may go to a non-blocking stream next: it must wait for it.
      if (has_n) order_needed_.store(g, std::memory_order_release);
      if (untracked) {
        // A non-blocking stream the shim cannot see cannot be ordered: wait for completion.
        CUevent done = take_event();
        if (record(done, CU_STREAM_LEGACY)) {
          epoch.waits.push_back(done);
          epoch.owned.push_back(done);
        } else {
          if (done != nullptr) spare_events_.push_back(done);
          ok = false;
        }
      }
    } else {
      ok = false;
    }
  }
  for (std::size_t i : to_mark) {
    NonBlocking& s = streams_[i];
    if (s.mark == nullptr) s.mark = take_event();
    const std::uint64_t k = s.entry->records.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (record(s.mark, s.stream)) {
      s.mark_record = k;
      s.mark_done = false;
      epoch.waits.push_back(s.mark);
      ++marks_recorded_;
    } else {
      ok = false;
    }
  }
  for (CUevent m : retired_marks_) epoch.waits.push_back(m);
  if (!ok) {
    // An event could not be recorded (the context is failing): wait for the whole device instead.
    real().cuCtxSynchronize();
    epoch.waits.clear();
  }
  closing_.store(false, std::memory_order_seq_cst);
  ++epochs_closed_;
  if (epoch.waits.empty()) ++passed_by_ordering_;
  closed_.push_back(std::move(epoch));
  last_closed_.store(id, std::memory_order_release);
  return true;
}

bool ReuseFence::epoch_complete(Epoch& epoch) {
  while (!epoch.waits.empty()) {
    CUevent e = epoch.waits.back();
    if (real().cuEventQuery(e) == CUDA_ERROR_NOT_READY) return false;
    epoch.waits.pop_back();  // done (or broken: nothing left to wait for)
    seen_complete(e);
  }
  return true;
}

void ReuseFence::seen_complete(CUevent e) {
  for (NonBlocking& s : streams_) {
    if (s.mark == e) s.mark_done = true;
  }
  auto it = std::find(retired_marks_.begin(), retired_marks_.end(), e);
  if (it != retired_marks_.end()) {
    retired_marks_.erase(it);
    spare_events_.push_back(e);
  }
}

void ReuseFence::pass_through(std::uint64_t id) {
  while (!closed_.empty() && closed_.front().id <= id) {
    for (CUevent e : closed_.front().owned) spare_events_.push_back(e);
    closed_.pop_front();
  }
  if (id > passed_through_.load(std::memory_order_relaxed)) {
    passed_through_.store(id, std::memory_order_release);
  }
}

void ReuseFence::poll_closed() {
  // Oldest first, until one is still running; then the newest (a join may have let it pass
  // first). Passing an epoch passes every earlier one.
  std::uint64_t passed = 0;
  for (Epoch& e : closed_) {
    if (!epoch_complete(e)) break;
    passed = e.id;
  }
  if (!closed_.empty() && closed_.back().id > passed && epoch_complete(closed_.back())) {
    passed = closed_.back().id;
  }
  if (passed != 0) pass_through(passed);
}

bool ReuseFence::passed(std::uint64_t ticket) {
  if (ticket == 0 || ticket <= passed_through_.load(std::memory_order_relaxed)) return true;
  if (ticket >= open_id_.load(std::memory_order_relaxed) && !close_open_epoch()) return false;
  poll_closed();
  return ticket <= passed_through_.load(std::memory_order_relaxed);
}

bool ReuseFence::wait(std::uint64_t ticket, std::uint64_t budget_ns) {
  if (passed(ticket)) return true;
  if (ticket >= open_id_.load(std::memory_order_relaxed)) return false;  // could not close
  auto it =
      std::find_if(closed_.begin(), closed_.end(), [&](const Epoch& e) { return e.id >= ticket; });
  if (it == closed_.end()) return false;
  Epoch& epoch = *it;
  ++waits_;
  if (budget_ns == kForever) {
    for (CUevent e : epoch.waits) real().cuEventSynchronize(e);
    for (CUevent e : epoch.waits) seen_complete(e);
    epoch.waits.clear();
  } else {
    const std::uint64_t deadline = monotonic_ns() + budget_ns;
    while (!epoch_complete(epoch)) {
      if (monotonic_ns() >= deadline) {
        ++waits_timed_out_;
        return false;
      }
      __builtin_ia32_pause();
    }
  }
  pass_through(epoch.id);
  return true;
}

void ReuseFence::order_stream(TrackedStream& entry, CUstream stream) {
  if (capturing()) {
    // A stream being captured runs its work later, at the graph's launch (itself a launch that
    // comes here); no event from outside the capture may be waited on now.
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (real().cuStreamIsCapturing == nullptr ||
        real().cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_NONE) {
      return;
    }
  }
  CUevent barrier = barrier_event_.load(std::memory_order_acquire);
  if (barrier == nullptr || real().cuStreamWaitEvent == nullptr) return;
  const std::uint64_t g = gen_.load(std::memory_order_acquire);
  if (real().cuStreamWaitEvent(stream, barrier, 0) == CUDA_SUCCESS) {
    raise_to(entry.ordered_gen, g);
    ordering_waits_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ReuseFence::add_stream(CUstream stream, TrackedStream* entry) {
  has_nonblocking_.store(true, std::memory_order_release);
  streams_.push_back(NonBlocking{stream, entry});
  // A new non-blocking stream is not ordered after the legacy stream's work, and blocks freed
  // with no fence before it existed may go to it: it waits for all work queued so far (an event
  // on the legacy stream, which is also a barrier for the blocking and per-thread streams). The
  // wait takes the event's state when it is made, so the event is a spare again at once. Not
  // during a stream capture (no legacy-stream work may be queued then).
  if (mode_ != config::ReuseFence::kAuto || capturing() || real().cuStreamWaitEvent == nullptr) {
    return;
  }
  ContextScope scope(context_);
  const std::uint64_t g = gen_.load(std::memory_order_acquire);
  CUevent e = take_event();
  if (e == nullptr) return;
  if (record(e, CU_STREAM_LEGACY) && real().cuStreamWaitEvent(stream, e, 0) == CUDA_SUCCESS) {
    raise_to(entry->ordered_gen, g);
  }
  spare_events_.push_back(e);
}

void ReuseFence::retire_stream(CUstream stream, TrackedStream* entry) {
  auto it = std::find_if(streams_.begin(), streams_.end(),
                         [&](const NonBlocking& s) { return s.entry == entry; });
  if (it == streams_.end()) return;
  NonBlocking s = *it;
  streams_.erase(it);
  const std::uint64_t need = entry->need_record.load(std::memory_order_seq_cst);
  const bool covered = need == 0 || need <= entry->joined.load(std::memory_order_seq_cst) ||
                       (s.mark_record != 0 && need <= s.mark_record);
  if (!covered && mode_ == config::ReuseFence::kAuto && !capturing()) {
    // Its queued work still runs after the destroy: the next epochs wait for it.
    ContextScope scope(context_);
    if (s.mark == nullptr) s.mark = take_event();
    entry->records.fetch_add(1, std::memory_order_seq_cst);
    if (record(s.mark, stream)) {
      s.mark_done = false;
      ++marks_recorded_;
    } else {
      real().cuCtxSynchronize();
      s.mark_done = true;
    }
    n_work_.store(true, std::memory_order_seq_cst);  // the next free needs an epoch
  } else if (!covered) {
    n_work_.store(true, std::memory_order_seq_cst);
  }
  if (s.mark == nullptr) return;
  if (s.mark_done) {
    spare_events_.push_back(s.mark);
  } else {
    retired_marks_.push_back(s.mark);
  }
}

std::vector<std::pair<const char*, std::uint64_t>> ReuseFence::counters() const {
  return {{"epochs", epochs_closed_},
          {"epochs_passed_at_close", passed_by_ordering_},
          {"barriers", gen_.load(std::memory_order_relaxed) - barriers_before_},
          {"marks", marks_recorded_},
          {"ordering_waits", ordering_waits_.load(std::memory_order_relaxed)},
          {"waits", waits_},
          {"waits_timed_out", waits_timed_out_},
          {"nonblocking_streams", streams_.size()}};
}

void ReuseFence::forget_all() {
  closed_.clear();
  streams_.clear();
  retired_marks_.clear();
  spare_events_.clear();
  barrier_event_.store(nullptr, std::memory_order_release);
  order_needed_.store(0, std::memory_order_release);
  const std::uint64_t open = open_id_.load(std::memory_order_relaxed);
  last_closed_.store(open - 1, std::memory_order_release);
  passed_through_.store(open - 1, std::memory_order_release);
}

void ReuseFence::reuse_for(CUcontext context) {
  forget_all();
  context_ = context;
  closing_.store(false, std::memory_order_seq_cst);
  n_work_.store(true, std::memory_order_seq_cst);
  has_nonblocking_.store(false, std::memory_order_release);
  ordering_waits_.store(0, std::memory_order_relaxed);
  barriers_before_ = gen_.load(std::memory_order_relaxed);
  marks_recorded_ = 0;
  epochs_closed_ = 0;
  passed_by_ordering_ = 0;
  waits_ = 0;
  waits_timed_out_ = 0;
}

}  // namespace cudapool::shim
