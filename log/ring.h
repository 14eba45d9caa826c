// log/ring.h: the log's bounded multi-producer single-consumer queue of LogRecord, with Vyukov's
// per-slot sequence numbers. A producer takes a ticket (one atomic add), waits while its slot is
// still full (spin, yield, then short sleeps: the ring never drops a record), copies the record and
// publishes it; the one consumer drains in ticket order. The ticket is the record's seq, so the
// log's order is the seq order and each thread's records keep their order. Allocated once; no
// allocation, lock or I/O on the producer side. Not a general container: one element type, one
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

  // capacity: rounded up to a power of two (at least 2).
  explicit Ring(std::size_t capacity = kDefaultCapacity);
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Producer, any thread: copies r into the next slot with seq = its ticket + 1 (1, 2, ...),
  // waiting while the ring is full. Returns the seq given, or 0 when the ring is closed (nothing
  // queued).
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

  std::size_t capacity() const { return mask_ + 1; }
  // Records queued and not yet drained (claimed slots included): a snapshot.
  std::size_t size() const;
  // Tickets taken (records pushed or being pushed).
  std::uint64_t appended() const { return tail_.load(std::memory_order_relaxed); }
  // Pushes that found their slot still full and had to wait.
  std::uint64_t producer_waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> seq{0};  // == ticket: free for it; == ticket + 1: published
    LogRecord record;  // backtrace[] beyond record.frames (oom.* outside oom events) is stale
  };

  bool published(std::uint64_t position) const {
    return slots_[position & mask_].seq.load(std::memory_order_acquire) == position + 1;
  }

  std::unique_ptr<Slot[]> slots_;
  std::size_t mask_;
  std::uint64_t wake_threshold_;

  alignas(64) std::atomic<std::uint64_t> tail_{0};  // next ticket
  alignas(64) std::atomic<std::uint64_t> head_{0};  // next position to drain (consumer writes)
  alignas(64) std::atomic<std::uint32_t> consumer_sleeping_{0};  // futex word
  std::atomic<bool> closed_{false};
  alignas(64) std::atomic<std::uint64_t> waits_{0};
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
