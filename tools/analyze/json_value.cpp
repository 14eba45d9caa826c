// SPDX-License-Identifier: Apache-2.0
// tools/analyze/json_value.cpp: see json_value.h.
#include "tools/analyze/json_value.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "tools/replay/flat_json.h"

namespace cudapool::analyze {

namespace {

constexpr std::size_t kMaxIntDigits = 4300;  // Python's own limit on an int made from text

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool value(JsonValue& out) {
    space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return object(out);
    if (c == '[') return array(out);
    if (c == '"') {
      out.type = JsonValue::Type::kString;
      return string(out.text);
    }
    if (literal("true")) {
      out.type = JsonValue::Type::kBool;
      out.boolean = true;
      return true;
    }
    if (literal("false")) {
      out.type = JsonValue::Type::kBool;
      return true;
    }
    if (literal("null")) return true;
    return number(out);
  }

  bool at_end() {
    space();
    return i_ == s_.size();
  }

 private:
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n'))
      ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  bool string(std::string& out) {
    const std::size_t start = ++i_;
    bool escaped = false;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') {
        escaped = true;
        ++i_;
      }
      ++i_;
    }
    if (i_ >= s_.size()) return false;
    const std::string_view raw = s_.substr(start, i_ - start);
    out = escaped ? replay::decode_json_string(raw) : std::string(raw);
    ++i_;
    return true;
  }
  bool number(JsonValue& out) {
    const std::size_t start = i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
        ++i_;
      } else {
        break;
      }
    }
    if (i_ == start) return false;
    out.type = JsonValue::Type::kNumber;
    out.text.assign(s_.substr(start, i_ - start));
    return true;
  }
  bool array(JsonValue& out) {
    out.type = JsonValue::Type::kArray;
    ++i_;
    space();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    for (;;) {
      out.items.emplace_back();
      if (!value(out.items.back())) return false;
      space();
      if (i_ >= s_.size()) return false;
      if (s_[i_++] == ']') return true;
      if (s_[i_ - 1] != ',') return false;
    }
  }
  bool object(JsonValue& out) {
    out.type = JsonValue::Type::kObject;
    ++i_;
    space();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    for (;;) {
      space();
      if (i_ >= s_.size() || s_[i_] != '"') return false;
      std::string key;
      if (!string(key)) return false;
      space();
      if (i_ >= s_.size() || s_[i_++] != ':') return false;
      JsonValue v;
      if (!value(v)) return false;
      out.set(key, std::move(v));
      space();
      if (i_ >= s_.size()) return false;
      if (s_[i_++] == '}') return true;
      if (s_[i_ - 1] != ',') return false;
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

bool hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Python's repr() of a float parsed from text.
std::string float_repr(const std::string& text) {
  const double d = std::strtod(text.c_str(), nullptr);
  if (d != d) return "nan";
  if (d == 1.0 / 0.0) return "inf";
  if (d == -1.0 / 0.0) return "-inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  if (ec != std::errc()) return text;
  std::string s(buf, end);
  const bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  const std::size_t e = s.find('e');
  std::string digits = s.substr(0, e);
  const int exponent = std::atoi(s.c_str() + e + 1);
  if (digits.size() > 1) digits.erase(1, 1);  // the '.'
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<std::size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<std::size_t>(exponent) + 1 - digits.size(), '0') +
             ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(exponent) + 1) + "." +
             digits.substr(static_cast<std::size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+',
                exponent < 0 ? -exponent : exponent);
  return out + exp;
}

// Whether a code point is one Python's str.isprintable() takes (Unicode's categories, for the
// ranges a log's strings hold: controls, format characters, separators and private use are
// not).
bool printable(unsigned long cp) {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad) return false;
  if ((cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f) ||
      (cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 || cp == 0xfeff || cp == 0x1680 ||
      cp == 0x180e || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe000 && cp <= 0xf8ff) ||
      cp >= 0xf0000 || cp == 0x061c || (cp >= 0x0600 && cp <= 0x0605) || cp == 0x06dd ||
      cp == 0x070f || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe) {
    return false;
  }
  return true;
}

// The code point at text[i] (valid UTF-8) and its length.
unsigned long code_point(std::string_view text, std::size_t i, std::size_t* length) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned c = b(0);
  if (c < 0x80 || i + 1 >= text.size()) {
    *length = 1;
    return c;
  }
  if (c < 0xe0) {
    *length = 2;
    return (c & 0x1f) << 6 | (b(1) & 0x3f);
  }
  if (c < 0xf0 && i + 2 < text.size()) {
    *length = 3;
    return (c & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
  }
  if (i + 3 < text.size()) {
    *length = 4;
    return static_cast<unsigned long>(c & 0x07) << 18 | (b(1) & 0x3f) << 12 | (b(2) & 0x3f) << 6 |
           (b(3) & 0x3f);
  }
  *length = 1;
  return c;
}

}  // namespace

const char* kind_text(Kind kind) {
  switch (kind) {
    case Kind::kUint:
      return "an integer from 0 to 2**64-1";
    case Kind::kInt:
      return "a 64-bit integer";
    case Kind::kHex:
      return "a hex string below 2**64";
    case Kind::kString:
      return "a string";
    case Kind::kBool:
      return "true or false";
    case Kind::kList:
      return "a list";
    case Kind::kObject:
      return "an object";
    case Kind::kHexList:
      return "a list of hex strings";
    case Kind::kStringList:
      return "a list of strings";
  }
  return "?";
}

bool JsonValue::is_integer() const {
  return type == Type::kNumber && text.find_first_of(".eE") == std::string::npos;
}

std::optional<Figure> JsonValue::integer() const {
  if (!is_integer()) return std::nullopt;
  const bool negative = text[0] == '-';
  const std::size_t digits = text.size() - (negative ? 1 : 0);
  if (digits > 38) return std::nullopt;
  Figure v = 0;
  for (std::size_t i = negative ? 1 : 0; i < text.size(); ++i) v = v * 10 + (text[i] - '0');
  return negative ? -v : v;
}

std::string JsonValue::integer_text() const {
  if (text.size() > kMaxIntDigits) {
    return text[0] == '-' ? "-18446744073709551616" : "18446744073709551616";
  }
  if (text == "-0") return "0";
  return text;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

JsonValue* JsonValue::find(std::string_view key) {
  for (auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool JsonValue::erase(std::string_view key) {
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (it->first == key) {
      members.erase(it);
      return true;
    }
  }
  return false;
}

void JsonValue::set(std::string_view key, JsonValue value) {
  if (JsonValue* v = find(key)) {
    *v = std::move(value);
  } else {
    members.emplace_back(std::string(key), std::move(value));
  }
}

std::optional<JsonValue> parse_json(std::string_view text) {
  Parser p(text);
  JsonValue v;
  if (!p.value(v) || !p.at_end()) return std::nullopt;
  return v;
}

bool is_hex_digits(std::string_view text) {
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return false;
  for (std::size_t i = 2; i < text.size(); ++i) {
    if (!hex_digit(text[i])) return false;
  }
  return true;
}

std::optional<std::uint64_t> hex_value(std::string_view text) {
  if (!is_hex_digits(text)) return std::nullopt;
  std::string_view digits = text.substr(2);
  while (digits.size() > 1 && digits[0] == '0') digits.remove_prefix(1);
  if (digits.size() > 16) return std::nullopt;
  std::uint64_t v = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), v, 16);
  return v;
}

bool fits(const JsonValue& v, Kind kind) {
  switch (kind) {
    case Kind::kUint: {
      const auto n = v.integer();
      return n && *n >= 0 && *n < kUint64Limit;
    }
    case Kind::kInt: {
      const auto n = v.integer();
      return n && *n >= -(Figure{1} << 63) && *n < (Figure{1} << 63);
    }
    case Kind::kHex:
      return v.is_string() && hex_value(v.text).has_value();
    case Kind::kString:
      return v.is_string();
    case Kind::kBool:
      return v.type == JsonValue::Type::kBool;
    case Kind::kList:
      return v.is_array();
    case Kind::kObject:
      return v.is_object();
    case Kind::kHexList:
    case Kind::kStringList:
      if (!v.is_array()) return false;
      for (const JsonValue& x : v.items) {
        if (!x.is_string() || (kind == Kind::kHexList && !hex_value(x.text))) return false;
      }
      return true;
  }
  return false;
}

std::string py_repr(std::string_view text) {
  const bool single = text.find('\'') == std::string_view::npos ||
                      text.find('"') != std::string_view::npos;
  const char quote = single ? '\'' : '"';
  std::string out(1, quote);
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = 1;
    const unsigned long cp = code_point(text, i, &n);
    char buf[16];
    if (cp == static_cast<unsigned long>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (printable(cp)) {
      out.append(text.substr(i, n));
    } else {
      std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02lx" : cp < 0x10000 ? "\\u%04lx" : "\\U%08lx",
                    cp);
      out += buf;
    }
    i += n;
  }
  out += quote;
  return out;
}

std::string py_repr(const JsonValue& v) {
  switch (v.type) {
    case JsonValue::Type::kNull:
      return "None";
    case JsonValue::Type::kBool:
      return v.boolean ? "True" : "False";
    case JsonValue::Type::kNumber:
      return v.is_integer() ? v.integer_text() : float_repr(v.text);
    case JsonValue::Type::kString:
      return py_repr(std::string_view(v.text));
    case JsonValue::Type::kArray: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(v.items[i]);
      }
      return out + "]";
    }
    case JsonValue::Type::kObject: {
      std::string out = "{";
      for (std::size_t i = 0; i < v.members.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(std::string_view(v.members[i].first)) + ": " + py_repr(v.members[i].second);
      }
      return out + "}";
    }
  }
  return "None";
}

std::string_view first_chars(std::string_view text, std::size_t n) {
  std::size_t i = 0;
  for (std::size_t k = 0; k < n && i < text.size(); ++k) {
    std::size_t len = 1;
    code_point(text, i, &len);
    i += len;
  }
  return text.substr(0, i);
}

std::size_t char_count(std::string_view text) {
  std::size_t count = 0;
  for (const char c : text) count += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return count;
}

}  // namespace cudapool::analyze
