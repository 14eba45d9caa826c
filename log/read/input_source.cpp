// SPDX-License-Identifier: Apache-2.0
// log/read/input_source.cpp: see input_source.h. Compressed bytes are read 256 KiB at a time and
// handed to the decoder 32 KiB at a time, so that corrupt data is found within 32 KiB of where the
// decoder stopped; plain bytes go straight into the caller's buffer.
#include "log/read/input_source.h"

#include "log/read/input.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cudapool::log {

namespace {

constexpr std::size_t kInBytes = std::size_t{256} << 10;  // compressed bytes read at a time
// Compressed bytes handed to the decoder at a time: corrupt data is found where the decoder stops
// (a zstd block is checked whole), within this many bytes of its end.
constexpr std::size_t kPiece = std::size_t{32} << 10;

}  // namespace

InputSource::InputSource(int fd, bool own, std::string name)
    : fd_(fd), own_(own), name_(std::move(name)) {}

InputSource::~InputSource() {
  if (own_) ::close(fd_);
}

bool InputSource::read_first(std::string_view* first) {
  in_.resize(kSniffBytes);
  while (in_len_ < kSniffBytes && !input_end_) {
    in_len_ += read_some(in_.data() + in_len_, kSniffBytes - in_len_);
  }
  *first = std::string_view(in_.data(), in_len_);
  return error_.empty();
}

void InputSource::use(const CompressionFormat* format) {
  format_ = format;
  if (format == nullptr) return;
  decoder_ = make_decoder(format->id);
  std::vector<char> bigger(std::max(kInBytes, in_len_));
  std::copy_n(in_.data(), in_len_, bigger.data());
  in_.swap(bigger);
}

std::size_t InputSource::fill(char* dst, std::size_t cap) {
  if (done_) return 0;
  const std::size_t n = decoder_ ? decode_into(dst, cap) : read_plain(dst, cap);
  if (n == 0) done_ = true;
  return n;
}

std::size_t InputSource::read_plain(char* dst, std::size_t cap) {
  if (in_pos_ < in_len_) {  // the first bytes, read by read_first()
    const std::size_t n = std::min(cap, in_len_ - in_pos_);
    std::memcpy(dst, in_.data() + in_pos_, n);
    in_pos_ += n;
    return n;
  }
  return read_some(dst, cap);
}

std::size_t InputSource::decode_into(char* dst, std::size_t cap) {
  if (!corrupt_.empty()) {  // found with the bytes given before it: the end now
    error_ = std::move(corrupt_);
    return 0;
  }
  for (;;) {
    if (in_pos_ == in_len_ && !input_end_) {
      in_pos_ = 0;
      in_len_ = read_some(in_.data(), in_.size());
    }
    const std::string_view at_hand(in_.data() + in_pos_, std::min(in_len_ - in_pos_, kPiece));
    const Decoder::Step step = decoder_->decode(at_hand, dst, cap);
    in_pos_ += step.consumed;
    // The offset in the input of the first byte not taken.
    const std::uint64_t offset = read_ - (in_len_ - in_pos_);
    if (step.corrupt) {
      // Where the decoder stopped; zstd may stop at the start of the piece it found bad.
      const std::uint64_t from = offset - step.consumed;
      const std::string where = step.consumed > 0 ? "at byte " + std::to_string(offset)
                                                  : "in bytes " + std::to_string(from) + " to " +
                                                        std::to_string(from + at_hand.size());
      std::string what = name_ + ": corrupt " + std::string(format_->name) + " data, found " +
                         where + " (" + decoder_->what() + "): the log cannot be read past it";
      if (step.produced > 0) {  // what came before it first
        corrupt_ = std::move(what);
        return step.produced;
      }
      error_ = std::move(what);
      return 0;
    }
    if (step.produced > 0) return step.produced;
    if (in_pos_ == in_len_ && input_end_) {
      if (error_.empty() && !stopped_ && decoder_->inside_frame()) {
        ended_early_ = name_ + ": the " + std::string(format_->name) +
                       " data ends in the middle of a frame, at byte " + std::to_string(offset) +
                       ": the log was cut short (a killed process, a copy in progress); every "
                       "line before the cut was read";
      }
      return 0;
    }
    if (step.consumed == 0 && !at_hand.empty()) {  // never expected of zlib or libzstd
      error_ = name_ + ": the " + std::string(format_->name) + " decoder stopped at byte " +
               std::to_string(offset) + ": the log cannot be read past it";
      return 0;
    }
  }
}

// Whether the input may be read now: false once stop_fd_ is readable (the reader stopped).
bool InputSource::wait_readable() {
  if (stop_fd_ < 0) return true;
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    const int n = ::poll(p, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0 && p[1].revents != 0) return false;
    return true;  // readable, at its end, in error (read(2) says which), or poll failed
  }
}

std::size_t InputSource::read_some(char* dst, std::size_t cap) {
  for (;;) {
    if (!wait_readable()) {
      stopped_ = true;
      break;
    }
    const ssize_t n = ::read(fd_, dst, cap);
    if (n > 0) {
      read_ += static_cast<std::uint64_t>(n);
      return static_cast<std::size_t>(n);
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking descriptor: wait for it
      if (stop_fd_ < 0) {
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, -1);
      }
      continue;
    }
    error_ = cannot_read(name_, std::strerror(errno));
    break;
  }
  input_end_ = true;
  return 0;
}

}  // namespace cudapool::log
