// SPDX-License-Identifier: Apache-2.0
// tools/analyze/input_tap.cpp: see input_tap.h.
#include "tools/analyze/input_tap.h"

#include <algorithm>
#include <cstring>

namespace cudapool::analyze {

namespace {
void keep_head(std::string& head, const char* s, std::size_t n) {
  if (head.size() < kLastLinePeek) head.append(s, std::min(n, kLastLinePeek - head.size()));
}
}  // namespace

void InputTap::observe(const char* s, std::size_t n) {
  if (n == 0) return;
  bytes_ += n;
  const char* last = static_cast<const char*>(memrchr(s, '\n', n));
  if (last == nullptr) {
    current_length_ += n;
    keep_head(current_head_, s, n);
    return;
  }
  const std::size_t at = static_cast<std::size_t>(last - s);
  const char* before = static_cast<const char*>(memrchr(s, '\n', at));
  if (before == nullptr) {  // the line in progress ends here
    previous_length_ = current_length_ + at;
    previous_head_ = std::move(current_head_);
    keep_head(previous_head_, s, at);
  } else {
    const std::size_t from = static_cast<std::size_t>(before - s) + 1;
    previous_length_ = at - from;
    previous_head_.assign(s + from, std::min<std::size_t>(at - from, kLastLinePeek));
  }
  current_length_ = n - at - 1;
  current_head_.assign(last + 1, std::min<std::size_t>(current_length_, kLastLinePeek));
}

std::streamsize InputTap::xsgetn(char* s, std::streamsize n) {
  std::streamsize got = 0;
  if (gptr() < egptr()) {  // what a single-character read left
    got = std::min<std::streamsize>(n, egptr() - gptr());
    std::memcpy(s, gptr(), static_cast<std::size_t>(got));
    gbump(static_cast<int>(got));
  }
  if (got < n && !at_end_) {
    const std::streamsize want = n - got;
    source_.read(s + got, want);
    const std::streamsize more = source_.gcount();
    observe(s + got, static_cast<std::size_t>(more));
    got += more;
    if (more < want) at_end_ = true;
  }
  return got;
}

std::streambuf::int_type InputTap::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (at_end_) return traits_type::eof();
  source_.read(one_, sizeof one_);
  const std::streamsize got = source_.gcount();
  observe(one_, static_cast<std::size_t>(got));
  if (got < static_cast<std::streamsize>(sizeof one_)) at_end_ = true;
  if (got == 0) return traits_type::eof();
  setg(one_, one_, one_ + got);
  return traits_type::to_int_type(*gptr());
}

LastLine InputTap::last_line() const {
  LastLine l;
  if (bytes_ == 0) return l;
  l.empty = false;
  l.newline = current_length_ == 0;
  l.length = l.newline ? previous_length_ : current_length_;
  l.head = l.newline ? previous_head_ : current_head_;
  return l;
}

}  // namespace cudapool::analyze
