// SPDX-License-Identifier: Apache-2.0
// log/ring.h: the log's bounded multi-producer single-consumer queue of LogRecord, with Vyukov's
// per-slot sequence numbers. A producer takes a ticket (one atomic add), waits while its slot is
// still full (spin, yield, then short sleeps: the ring never drops a record while the consumer
// makes progress), copies the record and publishes it; the one consumer drains in ticket order.
// A consumer that makes no progress at all for the stall limit (stuck in a write that does not
// return) closes the ring as stalled: the producers stop waiting. The ticket is the record's seq,
// so the log's order is the seq order and each thread's records keep their order. Allocated once;
// no allocation, lock or I/O on the producer side. Not a general container: one element type, one
// consumer, Linux only (futex).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "log/record.h"

namespace cudapool::log {

class Ring {
 public:
  static constexpr std::size_t kDefaultCapacity = 65536;

  // capacity: rounded up to a power of two (at least 2). stall_ms: how long a producer waits for
  // a slot while the consumer makes no progress (0: for ever).
  explicit Ring(std::size_t capacity = kDefaultCapacity, std::uint32_t stall_ms = 0);
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Producer, any thread: copies r into the next slot with seq = its ticket + 1 (1, 2, ...),
  // waiting while the ring is full. Returns the seq given, or 0 when the ring is closed (nothing
  // queued) or, while this push waited, the consumer made no progress for the stall limit (then
  // the ring is closed as stalled; the ticket is taken and its slot never published).
  std::uint64_t push(const LogRecord& r);

  // Consumer, one thread: calls fn(const LogRecord&) on up to max records, oldest first, and frees
  // their slots. Returns how many. Stops at a slot whose producer has not published yet.
  template <class Fn>
  std::size_t drain(Fn&& fn, std::size_t max);

  // Consumer: sleeps until a producer wakes it (the ring is a quarter full, or a producer waits for
  // a slot), wake_consumer() is called, or timeout_us passes. Returns at once when records wait.
  void wait_for_records(std::uint32_t timeout_us);
  // Anyone: ends a wait_for_records() now.
  void wake_consumer();

  // After close(), push() queues nothing and producers waiting for a slot give up: for when the
  // consumer is gone for good.
  void close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // close(), saying that the consumer stalled (push's stall, or a waiter that saw none).
  void close_stalled();
  bool stalled() const { return stalled_.load(std::memory_order_acquire); }

  // Consumer: it made progress besides draining (bytes written), for the producers' stall limit.
  void note_progress() {
    progress_.store(progress_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // Changes whenever the consumer drains a record or notes progress: what a waiter watches.
  std::uint64_t progress() const {
    return head_.load(std::memory_order_acquire) + progress_.load(std::memory_order_acquire);
  }

  std::size_t capacity() const { return mask_ + 1; }
  // Records queued and not yet drained (claimed slots included): a snapshot.
  std::size_t size() const;
  // Tickets taken (records pushed or being pushed).
  std::uint64_t appended() const { return tail_.load(std::memory_order_relaxed); }
  // Pushes that found their slot still full and had to wait.
  std::uint64_t producer_waits() const { return waits_.load(std::memory_order_relaxed); }
  // Pushes refused because the ring was closed as stalled (no ticket taken): records lost.
  std::uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> seq{0};  // == ticket: free for it; == ticket + 1: published
    LogRecord record;  // backtrace[] beyond record.frames (oom.* outside oom events) is stale
  };

  bool published(std::uint64_t position) const {
    return slots_[position & mask_].seq.load(std::memory_order_acquire) == position + 1;
  }

  bool wait_for_slot(const Slot& slot, std::uint64_t ticket);

  std::unique_ptr<Slot[]> slots_;
  std::size_t mask_;
  std::uint64_t wake_threshold_;
  std::uint64_t stall_ns_;

  alignas(64) std::atomic<std::uint64_t> tail_{0};  // next ticket
  alignas(64) std::atomic<std::uint64_t> head_{0};  // next position to drain (consumer writes)
  alignas(64) std::atomic<std::uint32_t> consumer_sleeping_{0};  // futex word
  std::atomic<bool> closed_{false};
  std::atomic<bool> stalled_{false};
  alignas(64) std::atomic<std::uint64_t> waits_{0};
  std::atomic<std::uint64_t> refused_{0};
  alignas(64) std::atomic<std::uint64_t> progress_{0};  // consumer writes
};

template <class Fn>
std::size_t Ring::drain(Fn&& fn, std::size_t max) {
  std::uint64_t position = head_.load(std::memory_order_relaxed);
  std::size_t n = 0;
  while (n < max && published(position)) {
    Slot& slot = slots_[position & mask_];
    fn(static_cast<const LogRecord&>(slot.record));
    slot.seq.store(position + capacity(), std::memory_order_release);
    ++position;
    ++n;
    // Publish progress every so often so that size() and the wake threshold stay current.
    // Release: a producer that reads head_ may write the slots below it (Ring::push).
    if ((n & 63) == 0) head_.store(position, std::memory_order_release);
  }
  head_.store(position, std::memory_order_release);
  return n;
}

}  // namespace cudapool::log
