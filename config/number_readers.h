// SPDX-License-Identifier: Apache-2.0
// config/number_readers.h: the word readers and writers that every key's value goes through: a
// whole unsigned integer, a whole finite decimal number, True/False, and the shortest text that
// reads back as the same number. Numbers must be written whole (PyTorch's stoull would take
// "12abc" as 12). This file knows no keys (keys.h) and no Options fields (key_values.h).
#pragma once

#include <bit>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace cudapool::config {

inline constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();

inline bool is_power_of_two(std::size_t v) {
  return std::has_single_bit(v);
}

// A whole unsigned decimal integer (an optional '+'). On failure `error` says why.
bool read_unsigned(std::string_view word, std::size_t& out, std::string& error);
// A whole finite decimal number (fixed or scientific notation, an optional '+'); a negative zero
// reads as 0.
bool read_number(std::string_view word, double& out, std::string& error);
// Exactly True or False. On failure `error` says why, or is "" when the key's accepted text says
// it all.
bool read_bool(std::string_view word, bool& out, std::string& error);

std::string number_text(std::size_t v);
// Shortest text that reads back as the same double ("0.6", "1", "1e-05").
std::string number_text(double v);
std::string bool_text(bool v);

}  // namespace cudapool::config
