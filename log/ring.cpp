// SPDX-License-Identifier: Apache-2.0
// log/ring.cpp: see ring.h. The producer's wait and the consumer's sleep use futex(2) directly
// (through syscall(), which is no cancellation point: a thread cancelled inside push() would
// leave its slot unpublished and stall the log).
#include "log/ring.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace cudapool::log {

namespace {

std::size_t round_up_pow2(std::size_t n) {
  std::size_t p = 2;
  while (p < n) p <<= 1;
  return p;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
                std::uint32_t timeout_us) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout_us / 1000000u);
  ts.tv_nsec = static_cast<long>(timeout_us % 1000000u) * 1000;
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

void sleep_us(std::uint32_t us) {
  std::atomic<std::uint32_t> never_woken{0};
  futex_wait(&never_woken, 0, us);
}

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
static_assert(std::is_trivially_copyable_v<LogRecord> && std::is_standard_layout_v<LogRecord>);

}  // namespace

Ring::Ring(std::size_t capacity, std::uint32_t stall_ms)
    : slots_(new Slot[round_up_pow2(capacity)]),
      mask_(round_up_pow2(capacity) - 1),
      stall_ns_(std::uint64_t{stall_ms} * 1000000u) {
  for (std::size_t i = 0; i <= mask_; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
  wake_threshold_ = (mask_ + 1) / 4 > 0 ? (mask_ + 1) / 4 : 1;
}

// Full: the consumer has not freed this slot from the previous lap yet. Wait, never drop, while
// the consumer makes progress; false when the ring closed meanwhile (or closes now, stalled).
bool Ring::wait_for_slot(const Slot& slot, std::uint64_t ticket) {
  waits_.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t seen = 0, since_ns = 0;
  for (unsigned spins = 0; slot.seq.load(std::memory_order_acquire) != ticket; ++spins) {
    if (closed_.load(std::memory_order_acquire)) return false;
    if (spins < 64) {
      cpu_relax();
      continue;
    }
    wake_consumer();
    if (spins < 96) {
      sched_yield();
      continue;
    }
    sleep_us(50);
    if (stall_ns_ == 0) continue;
    const std::uint64_t now = monotonic_ns();
    const std::uint64_t progress_now = progress();
    if (since_ns == 0 || progress_now != seen) {
      seen = progress_now;
      since_ns = now;
    } else if (now - since_ns >= stall_ns_) {
      close_stalled();
      return false;
    }
  }
  return true;
}

std::uint64_t Ring::push(const LogRecord& r) {
  if (closed_.load(std::memory_order_relaxed)) {
    if (stalled_.load(std::memory_order_relaxed)) refused_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const std::uint64_t ticket = tail_.fetch_add(1, std::memory_order_relaxed);
  Slot& slot = slots_[ticket & mask_];
  // The slot is free when the consumer has drained its previous lap. head_ tells without touching
  // the slot (whose line the consumer wrote last: loading it would stall on the transfer); only
  // when head_ is not far enough is the slot's own seq asked, the exact test.
  const bool surely_free =
      ticket < capacity() || head_.load(std::memory_order_acquire) + capacity() > ticket;
  if (!surely_free && slot.seq.load(std::memory_order_acquire) != ticket &&
      !wait_for_slot(slot, ticket)) {
    return 0;
  }
  // The fixed fields and the frames in use only: most records carry no backtrace.
  // A constant-size copy of the fixed part (vector moves; a variable-size one becomes rep movs,
  // whose start-up cost measured a fifth of push()).
  std::memcpy(static_cast<void*>(&slot.record), &r, offsetof(LogRecord, backtrace));
  if (r.action == LogAction::kOom) {
    slot.record.oom = r.oom;  // an oom event's figures share the backtrace's storage
  } else {
    const std::size_t frames = r.frames < kMaxBacktrace ? r.frames : kMaxBacktrace;
    for (std::size_t i = 0; i < frames; ++i) slot.record.backtrace[i] = r.backtrace[i];
  }
  slot.record.seq = ticket + 1;
  slot.seq.store(ticket + 1, std::memory_order_release);
  if (consumer_sleeping_.load(std::memory_order_relaxed) != 0 &&
      static_cast<std::int64_t>(ticket + 1 - head_.load(std::memory_order_relaxed)) >=
          static_cast<std::int64_t>(wake_threshold_)) {
    wake_consumer();
  }
  return ticket + 1;
}

void Ring::wait_for_records(std::uint32_t timeout_us) {
  consumer_sleeping_.store(1, std::memory_order_seq_cst);
  if (!published(head_.load(std::memory_order_relaxed)) && !closed()) {
    futex_wait(&consumer_sleeping_, 1, timeout_us);
  }
  consumer_sleeping_.store(0, std::memory_order_relaxed);
}

void Ring::wake_consumer() {
  if (consumer_sleeping_.load(std::memory_order_relaxed) != 0 &&
      consumer_sleeping_.exchange(0, std::memory_order_acq_rel) != 0) {
    futex_wake(&consumer_sleeping_);
  }
}

void Ring::close() {
  closed_.store(true, std::memory_order_release);
  wake_consumer();
}

void Ring::close_stalled() {
  stalled_.store(true, std::memory_order_release);
  close();
}

std::size_t Ring::size() const {
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  return tail > head ? static_cast<std::size_t>(tail - head) : 0;
}

}  // namespace cudapool::log
