// SPDX-License-Identifier: Apache-2.0
// tools/analyze/json_value.h: a JSON value as the Python side sees it, for the few lines the
// engine keeps whole (the header and the summary line) and the nested fields of events it reads
// (a backtrace): objects keep their keys in the order first seen with the value last given (a
// repeated key: the last one counts, as in any JSON reader), numbers keep their text (an integer
// of any length is exact; "1.0" and "1e3" are not integers), strings are decoded. Also the
// format's kinds of values (docs/log-format.md; scripts/cudapool_analysis/vocabulary.py fits())
// and Python's repr() of a value, which some of the report's problems quote. parse() takes a line
// that flat_json.h's scanner accepted (strict JSON, nested at most 64 levels). Not here: what the
// fields mean (line_checks.h), writing JSON (json_out.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/analyze/figure.h"

namespace cudapool::analyze {

enum class Kind : std::uint8_t {
  kUint,  // an integer from 0 to 2^64 - 1
  kInt,   // an integer from -2^63 to 2^63 - 1 (the summary's statistics)
  kHex,   // a string "0x" or "0X" and hex digits, its value below 2^64
  kString,
  kBool,
  kList,
  kObject,
  kHexList,  // a list of hex strings
  kStringList,
};

// How the report names a kind ("an integer from 0 to 2**64-1", ...): checks.py's KIND_TEXT.
const char* kind_text(Kind kind);

struct JsonValue {
  enum class Type : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // a number's text as written; a string, decoded (UTF-8)
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  // A number of that text (as written), a string of that (decoded) text.
  static JsonValue number_of(std::string text) { return of(Type::kNumber, std::move(text)); }
  static JsonValue string_of(std::string text) { return of(Type::kString, std::move(text)); }

  bool is_null() const { return type == Type::kNull; }
  bool is_string() const { return type == Type::kString; }
  bool is_array() const { return type == Type::kArray; }
  bool is_object() const { return type == Type::kObject; }
  // A number written without a fraction or an exponent (Python reads it as an int).
  bool is_integer() const;
  // Its value when it is an integer that 128 bits hold (none of the format's ranges is wider).
  std::optional<Figure> integer() const;
  // The value of an integer as Python prints it ("%d"): its text, "-0" as 0, and one of more than
  // 4300 characters as +-2**64 (the value the Python reader gives it).
  std::string integer_text() const;

  const JsonValue* find(std::string_view key) const;
  JsonValue* find(std::string_view key);
  bool erase(std::string_view key);
  // Sets key (in place when present, else at the end).
  void set(std::string_view key, JsonValue value);

 private:
  static JsonValue of(Type type, std::string text) {
    JsonValue v;
    v.type = type;
    v.text = std::move(text);
    return v;
  }
};

// Parses a JSON text the line scanner accepted; nullopt for anything else.
std::optional<JsonValue> parse_json(std::string_view text);

// Whether a value is of a kind (an integer kind never takes true or false, nor 1.0).
bool fits(const JsonValue& v, Kind kind);
// The value of a hex string (any length of digits) when it is below 2^64, else nullopt; for
// strings only (vocabulary.hex_value).
std::optional<std::uint64_t> hex_value(std::string_view text);
// Whether text is "0x"/"0X" and one or more hex digits (of any value: vocabulary.hex_digits_value).
bool is_hex_digits(std::string_view text);

// Python's repr() of the value the Python reader makes of v: None, True, 12, 1.5, 'text',
// [1, 'a'], {'k': None}.
std::string py_repr(const JsonValue& v);
// Python's repr() of a str.
std::string py_repr(std::string_view text);

// The first n characters (code points) of UTF-8 text, as Python's text[:n].
std::string_view first_chars(std::string_view text, std::size_t n);
// The length of UTF-8 text in characters (code points), as Python's len().
std::size_t char_count(std::string_view text);

}  // namespace cudapool::analyze
