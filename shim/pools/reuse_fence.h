// SPDX-License-Identifier: Apache-2.0
// shim/pools/reuse_fence.h: the reuse fences of one context's pool (reuse_fence auto|sync|none),
// the one object both the pool's backend and the threads' caches ask whether a freed block may be
// handed out again. docs/shim.md, "Reuse fences", says why each rule is safe.
//
// auto: frees are grouped in epochs, named by increasing tickets. A free needs no ticket when the
// pool is quiet: since its last barrier, no work went to any stream but the legacy one (or, once a
// non-blocking stream exists, to none at all), and every earlier epoch passed. An epoch closes when
// a block of it is wanted back: the shim then records one event on the legacy default stream (the
// barrier: it waits for every blocking and per-thread stream, and their later work waits for it),
// and looks at each non-blocking stream of the context: one with no work since it was last covered
// needs nothing; one whose work was joined into a legacy-ordered stream (the program waited there
// on an event recorded after that work: cuDNN's and PyTorch's side streams) is covered by the
// barrier; any other gets an event of the shim's (a mark) that must complete. The epoch passes
// when its marks completed; passing an epoch passes every earlier one. Work that goes to a
// non-blocking stream later is ordered after the last barrier: unless the program already made
// the stream wait for legacy-ordered work recorded after it (a fork), its next launch first waits
// for the barrier (order_before_work, from the launch hooks). sync: every free synchronizes the
// context, as the driver does. none: nothing.
//
// Locking: close, poll and wait run under the pool's lock; quiet(), passed_through(),
// generation() and order_before_work() take none.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "config/options.h"
#include "shim/driver/cuda_api.h"
#include "shim/pools/stream_registry.h"

namespace cudapool::shim {

// Work on streams since a pool's last barrier, one bit per pool slot below 63 (pools at higher
// slots always assume work). Set by the hooks (stream_work.h), cleared by the pool's barrier.
inline std::atomic<std::uint64_t> g_side_work_mask{~std::uint64_t{0}};    // blocking, per-thread
inline std::atomic<std::uint64_t> g_legacy_work_mask{~std::uint64_t{0}};  // legacy (once needed)

class ReuseFence {
 public:
  ReuseFence(CUcontext context, config::ReuseFence mode, int pool_slot);
  ReuseFence(const ReuseFence&) = delete;
  ReuseFence& operator=(const ReuseFence&) = delete;

  // --- under the pool's lock ---
  // The ticket a block freed now must wait for: 0 when it is safe at once (sync: after the
  // context synchronized).
  std::uint64_t ticket_for_free();
  // Whether the ticket passed (closes its epoch and polls marks as needed; never blocks).
  bool passed(std::uint64_t ticket);
  // Waits until the ticket passed, at most budget_ns (kForever: no limit); false when it did not
  // pass (the budget ran out, or a stream capture is in progress and nothing may be recorded).
  static constexpr std::uint64_t kForever = ~std::uint64_t{0};
  bool wait(std::uint64_t ticket, std::uint64_t budget_ns);
  // A non-blocking stream of this context (its entry); it is first ordered after all work queued
  // so far.
  void add_stream(CUstream stream, TrackedStream* entry);
  // A non-blocking stream about to be destroyed: work it still has gets a mark the next epochs
  // wait for.
  void retire_stream(CUstream stream, TrackedStream* entry);
  // The context is gone: every event and stream it had is forgotten (no driver call).
  void forget_all();
  // After forget_all, for the pool's object made over for a new context: the fences of `context`,
  // as new, but in place (the hooks may still read this object's atomics through the entry of a
  // dead context's stream: they stay valid) and with ticket and barrier numbers going on from the
  // old context's, so a stale record of a barrier number never names one this context lacks.
  void reuse_for(CUcontext context);

  // --- lock-free ---
  // Whether a block freed now is safe at once, asked without the pool's lock (thread caches).
  bool quiet() const;
  std::uint64_t passed_through() const { return passed_through_.load(std::memory_order_acquire); }
  // Barriers recorded so far (for the origin of the program's events).
  std::uint64_t generation() const { return gen_.load(std::memory_order_acquire); }
  std::uint32_t pool_slot() const { return static_cast<std::uint32_t>(slot_); }
  // Called by the hooks just before work is queued on non-blocking stream `stream` of this pool.
  void order_before_work(TrackedStream& entry, CUstream stream) {
    if (entry.ordered_gen.load(std::memory_order_relaxed) <
        order_needed_.load(std::memory_order_acquire)) {
      order_stream(entry, stream);
    }
  }
  // Work went to a non-blocking stream of this pool (the hooks).
  void note_nonblocking_work() {
    if (!n_work_.load(std::memory_order_relaxed)) n_work_.store(true, std::memory_order_seq_cst);
  }

  // What the fences did, for the log's summary (under the pool's lock): name, count.
  std::vector<std::pair<const char*, std::uint64_t>> counters() const;

 private:
  struct Epoch {
    std::uint64_t id = 0;
    std::vector<CUevent> waits;  // must complete before the epoch passes
    std::vector<CUevent> owned;  // of those, the ones this epoch recorded for itself
  };
  struct NonBlocking {
    CUstream stream = nullptr;
    TrackedStream* entry = nullptr;
    CUevent mark = nullptr;         // the shim's last event on it
    std::uint64_t mark_record = 0;  // that event's record number (0: none yet)
    bool mark_done = true;          // it was seen complete
  };

  std::uint64_t bit() const { return slot_ < 63 ? std::uint64_t{1} << slot_ : 0; }
  bool close_open_epoch();
  // Whether every event the epoch waits for completed (polled; those seen done are dropped).
  bool epoch_complete(Epoch& epoch);
  // Event e was seen complete: the marks it was are done.
  void seen_complete(CUevent e);
  // Epochs up to id passed: they are forgotten and their own events become spares.
  void pass_through(std::uint64_t id);
  void poll_closed();
  void order_stream(TrackedStream& entry, CUstream stream);
  CUevent take_event();
  bool record(CUevent event, CUstream stream);

  CUcontext context_;
  config::ReuseFence mode_;
  int slot_;
  std::atomic<std::uint64_t> open_id_{1};  // the epoch frees join now
  std::atomic<std::uint64_t> last_closed_{0};
  std::atomic<std::uint64_t> passed_through_{0};
  std::atomic<bool> closing_{false};  // between clearing the work bits and the barrier
  std::atomic<bool> n_work_{true};
  std::atomic<std::uint64_t> gen_{0};
  std::atomic<std::uint64_t> order_needed_{0};
  std::atomic<CUevent> barrier_event_{nullptr};  // re-recorded at every barrier
  std::atomic<std::uint64_t> ordering_waits_{0};
  std::uint64_t marks_recorded_ = 0;
  std::uint64_t epochs_closed_ = 0;
  std::uint64_t passed_by_ordering_ = 0;  // epochs that passed at their close (no mark to wait for)
  std::uint64_t waits_ = 0;               // blocking or bounded waits asked for
  std::uint64_t waits_timed_out_ = 0;
  std::uint64_t barriers_before_ = 0;  // gen_ when the object was made over (reuse_for)
  std::deque<Epoch> closed_;           // oldest first
  std::vector<NonBlocking> streams_;
  std::vector<CUevent> retired_marks_;  // of destroyed streams, until seen complete
  std::vector<CUevent> spare_events_;
  std::atomic<bool> has_nonblocking_{false};
};

}  // namespace cudapool::shim
