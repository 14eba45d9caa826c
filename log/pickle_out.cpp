// SPDX-License-Identifier: Apache-2.0
// log/pickle_out.cpp: see pickle_out.h.
#include "log/pickle_out.h"

#include <cstring>

namespace cudapool::log {

namespace {

// Pickle's opcodes (Lib/pickletools.py names them).
constexpr unsigned char kProto = 0x80, kStop = '.', kMark = '(', kNone = 'N', kNewTrue = 0x88,
                        kNewFalse = 0x89, kBinInt1 = 'K', kBinInt2 = 'M', kBinInt = 'J',
                        kLong1 = 0x8a, kBinFloat = 'G', kBinUnicode = 'X', kEmptyList = ']',
                        kAppends = 'e', kEmptyDict = '}', kSetItems = 'u', kTuple = 't';

// The length of the well-formed UTF-8 sequence at s[i], or 0 when it is not one.
std::size_t sequence_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = at(i);
  if (b < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range (RFC 3629's table)
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    if (b == 0xe0) lo = 0xa0;  // no overlong form
    if (b == 0xed) hi = 0x9f;  // no surrogate
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

PickleOut::PickleOut() {
  byte(kProto);
  byte(2);
}

void PickleOut::little_endian(std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) byte(static_cast<unsigned char>(value >> (8 * i)));
}

void PickleOut::none() {
  byte(kNone);
}

void PickleOut::boolean(bool value) {
  byte(value ? kNewTrue : kNewFalse);
}

void PickleOut::integer(std::int64_t value) {
  if (value >= 0 && value < 0x100) {
    byte(kBinInt1);
    little_endian(static_cast<std::uint64_t>(value), 1);
  } else if (value >= 0 && value < 0x10000) {
    byte(kBinInt2);
    little_endian(static_cast<std::uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    byte(kBinInt);
    little_endian(static_cast<std::uint64_t>(value), 4);
  } else {
    // LONG1: the fewest little-endian two's-complement bytes that hold the value (at most 8).
    const auto bits = static_cast<std::uint64_t>(value);
    int n = 8;
    while (n > 1) {
      const std::int64_t shifted = value >> (8 * (n - 1) - 1);  // the sign and the top byte
      if (shifted != 0 && shifted != -1) break;
      --n;
    }
    byte(kLong1);
    byte(static_cast<unsigned char>(n));
    little_endian(bits, n);
  }
}

void PickleOut::unsigned_integer(std::uint64_t value) {
  if (value <= static_cast<std::uint64_t>(INT64_MAX)) {
    integer(static_cast<std::int64_t>(value));
    return;
  }
  byte(kLong1);  // 2^63 and above: nine bytes, the last 0 for a positive sign
  byte(9);
  little_endian(value, 8);
  byte(0);
}

void PickleOut::real(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  byte(kBinFloat);  // big-endian
  for (int i = 7; i >= 0; --i) byte(static_cast<unsigned char>(bits >> (8 * i)));
}

void PickleOut::text(std::string_view utf8) {
  const std::string valid = valid_utf8(utf8);
  byte(kBinUnicode);
  little_endian(valid.size(), 4);
  out_ += valid;
}

void PickleOut::begin_list() {
  byte(kEmptyList);
  byte(kMark);
}

void PickleOut::end_list() {
  byte(kAppends);
}

void PickleOut::begin_dict() {
  byte(kEmptyDict);
  byte(kMark);
}

void PickleOut::end_dict() {
  byte(kSetItems);
}

void PickleOut::begin_tuple() {
  byte(kMark);
}

void PickleOut::end_tuple() {
  byte(kTuple);
}

std::string PickleOut::finish() {
  byte(kStop);
  std::string out;
  out.swap(out_);
  byte(kProto);
  byte(2);
  return out;
}

}  // namespace cudapool::log
