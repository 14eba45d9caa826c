// SPDX-License-Identifier: Apache-2.0
// log/read/read_ahead.cpp: see read_ahead.h. One mutex and two condition variables around a ring
// of slots; a slot's bytes are written by the thread outside the lock (the slot is neither
// filled nor held by the reader then) and read by the reader after the lock handed it over.
#include "log/read/read_ahead.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <exception>
#include <system_error>

#include "log/read/input_source.h"

namespace cudapool::log {

ReadAhead::ReadAhead(InputSource& source, bool whole_chunks, std::size_t chunks,
                     std::size_t chunk_bytes)
    : source_(source), whole_chunks_(whole_chunks), slots_(chunks < 2 ? 2 : chunks) {
  for (Slot& slot : slots_) slot.bytes.resize(chunk_bytes == 0 ? 1 : chunk_bytes);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {
    ::close(stop_fd_);
    throw;
  }
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  freed_.notify_all();
  const std::uint64_t one = 1;
  while (::write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  thread_.join();
  ::close(stop_fd_);
}

bool ReadAhead::next(Chunk* chunk) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (released_ < tail_) {  // the chunk given before
    ++released_;
    freed_.notify_one();
  }
  filled_.wait(lock, [this] { return tail_ < head_ || end_; });
  if (tail_ == head_) return false;
  const Slot& slot = slots_[tail_ % slots_.size()];
  ++tail_;
  chunk->data = slot.bytes.data();
  chunk->size = slot.size;
  chunk->read = slot.read;
  return true;
}

std::size_t ReadAhead::ready() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(head_ - tail_);
}

void ReadAhead::run() {
  source_.set_stop_fd(stop_fd_);
  try {
    produce();
  } catch (const std::exception& e) {  // std::bad_alloc in a message, say: the end, said
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = e.what();
    end_ = true;
  }
  filled_.notify_one();
}

void ReadAhead::produce() {
  for (;;) {
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      freed_.wait(lock, [this] { return stop_ || head_ - released_ < slots_.size(); });
      if (stop_) {
        end_ = true;
        return;
      }
      slot = &slots_[head_ % slots_.size()];
    }
    const std::size_t cap = slot->bytes.size();
    std::size_t size = 0;
    bool end = false;
    while (size < cap) {
      const std::size_t n = source_.fill(slot->bytes.data() + size, cap - size);
      if (n == 0) {
        end = true;
        break;
      }
      size += n;
      if (!whole_chunks_) break;  // not a regular file: it may wait for more next
    }
    slot->size = size;
    slot->read = source_.bytes_read();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (size > 0) ++head_;
      if (end) end_ = true;
    }
    filled_.notify_one();
    if (end) return;
  }
}

}  // namespace cudapool::log
