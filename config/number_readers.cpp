// SPDX-License-Identifier: Apache-2.0
// config/number_readers.cpp: the word readers and writers (see number_readers.h), on
// std::from_chars / std::to_chars. This file knows no keys and no Options fields.
#include "config/number_readers.h"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

namespace cudapool::config {

namespace {

// Optional '+' as std::stoull/std::stod allow it; a second sign is not a number.
std::string_view drop_plus(std::string_view word) {
  if (!word.empty() && word.front() == '+') word.remove_prefix(1);
  return word;
}

}  // namespace

bool read_unsigned(std::string_view word, std::size_t& out, std::string& error) {
  if (word.empty()) {
    error = "missing value";
    return false;
  }
  if (word.front() == '-') {
    error = "negative numbers are not accepted";
    return false;
  }
  const std::string_view digits = drop_plus(word);
  std::size_t value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (ec == std::errc::result_out_of_range) {
    error = "the number does not fit in 64 bits";
    return false;
  }
  if (digits.empty() || ec != std::errc() || ptr != end) {
    error = "not an integer";
    return false;
  }
  out = value;
  return true;
}

bool read_number(std::string_view word, double& out, std::string& error) {
  if (word.empty()) {
    error = "missing value";
    return false;
  }
  const std::string_view text = drop_plus(word);
  if (!text.empty() && text.front() == '+') {
    error = "not a number";
    return false;
  }
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    error = "the number is out of range";
    return false;
  }
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    error = "not a number";
    return false;
  }
  // "-0" is a number (stod reads it, PyTorch takes it as 0): stored as +0, so that it is never
  // shown as "-0".
  out = value == 0.0 ? 0.0 : value;
  return true;
}

bool read_bool(std::string_view word, bool& out, std::string& error) {
  if (word == "True" || word == "False") {
    out = word == "True";
    return true;
  }
  if (word.empty()) {
    error = "missing value";
  } else if (word == "true" || word == "false" || word == "TRUE" || word == "FALSE") {
    error = "write True or False, with a capital first letter";
  } else {
    error.clear();
  }
  return false;
}

std::string number_text(std::size_t v) {
  return std::to_string(v);
}

std::string number_text(double v) {
  std::array<char, 64> buf{};
  const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return "?";
  return std::string(buf.data(), ptr);
}

std::string bool_text(bool v) {
  return v ? "True" : "False";
}

}  // namespace cudapool::config
