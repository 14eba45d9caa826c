// SPDX-License-Identifier: Apache-2.0
// tools/replay/flat_json.h: a fast scanner for one JSON object per line, handing each top-level
// key and its raw value to a visitor. The whole line is checked as strict JSON (RFC 8259: numbers
// without leading zeros, no NaN, strings of valid UTF-8 with valid escapes and no raw control
// characters, surrogate escapes in pairs), nested at most kMaxJsonDepth levels; nested values are
// skipped, string escapes are left encoded (decode_json_string() decodes one). It exists because
// nlohmann::json is too slow for millions of log lines a second; it is not a general JSON parser
// (the header line is read with nlohmann::json). What a line of the log must hold besides:
// log_event.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace cudapool::replay {

// The deepest a line may nest: 64 levels, the line's object counted (docs/log-format.md).
inline constexpr int kMaxJsonDepth = 64;

enum class JsonKind : std::uint8_t { kString, kNumber, kLiteral, kNested };

struct JsonField {
  std::string_view key;    // without quotes, escapes not decoded
  std::string_view value;  // strings without quotes, escapes not decoded; other kinds as written
  JsonKind kind;
  bool key_escaped = false;    // the key holds an escape: decode_json_string() it
  bool value_escaped = false;  // likewise the value, for a string
};

using FieldVisitor = void (*)(void* context, const JsonField& field);
bool scan_flat_object_impl(std::string_view line, FieldVisitor visit, void* context);

// Calls visit(field) for each top-level field, repeated keys included, in order. Returns false
// when the line is not one well-formed JSON object (nothing but JSON white space may surround
// it); fields before the fault were visited.
template <class Visit>
bool scan_flat_object(std::string_view line, Visit&& visit) {
  using V = std::remove_reference_t<Visit>;
  return scan_flat_object_impl(
      line, [](void* context, const JsonField& field) { (*static_cast<V*>(context))(field); },
      const_cast<void*>(static_cast<const void*>(&visit)));
}

// The text of a string the scanner accepted (between its quotes), escapes decoded to UTF-8.
std::string decode_json_string(std::string_view raw);

// The format's kinds of values (docs/log-format.md, "Valid lines"), std::nullopt for anything
// else: an unsigned integer is a JSON integer (no fraction, no exponent; -0 is 0) below 2^64; a
// hex string is a JSON string "0x" or "0X" and one or more hex digits, its value below 2^64.
std::optional<std::uint64_t> parse_uint(const JsonField& field);
std::optional<std::uint64_t> parse_hex(const JsonField& field);

}  // namespace cudapool::replay
