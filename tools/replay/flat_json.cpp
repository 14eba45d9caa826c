// SPDX-License-Identifier: Apache-2.0
// tools/replay/flat_json.cpp: see flat_json.h.
#include "tools/replay/flat_json.h"

#include <array>
#include <charconv>

namespace cudapool::replay {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

void skip_space(std::string_view s, std::size_t& i) {
  while (i < s.size() && is_space(s[i])) ++i;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits of a \u escape at s[i..i+4), or -1.
long read_u4(std::string_view s, std::size_t i) {
  if (i > s.size() || s.size() - i < 4) return -1;
  long v = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const int d = hex_digit(s[i + k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The length of the well-formed UTF-8 sequence at s[i] (a lead byte of 0x80 or more), or 0
// (Unicode's table of well-formed sequences: no overlong forms, no surrogates, none above
// U+10FFFF).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return i + k < s.size() && at(k) >= lo && at(k) <= hi;
  };
  const unsigned c = at(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// What a byte is inside a string: 0 an ordinary character, else the one thing to look at.
enum : unsigned char { kPlain, kQuote, kBackslash, kControl, kHigh };
constexpr auto kStringByte = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = kControl;
  for (int c = 0x80; c < 0x100; ++c) t[c] = kHigh;
  t['"'] = kQuote;
  t['\\'] = kBackslash;
  return t;
}();

// At an opening quote; leaves i after the closing quote. out gets the contents (escapes kept);
// escaped says whether there was one.
bool read_string(std::string_view s, std::size_t& i, std::string_view& out, bool& escaped) {
  const std::size_t start = ++i;
  escaped = false;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (kStringByte[c]) {
      case kPlain:
        ++i;
        while (i < s.size() && kStringByte[static_cast<unsigned char>(s[i])] == kPlain) ++i;
        continue;
      case kQuote:
        out = s.substr(start, i - start);
        ++i;
        return true;
      case kControl:
        return false;
      case kHigh: {
        const std::size_t n = utf8_length(s, i);
        if (n == 0) return false;
        i += n;
        continue;
      }
      default:
        break;
    }
    escaped = true;  // a backslash
    if (++i >= s.size()) return false;
    const char e = s[i++];
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
        e == 't') {
      continue;
    }
    if (e != 'u') return false;
    const long u = read_u4(s, i);
    if (u < 0 || (u >= 0xdc00 && u <= 0xdfff)) return false;  // a low surrogate alone
    i += 4;
    if (u >= 0xd800 && u <= 0xdbff) {  // a high surrogate: its low one must follow
      if (s.size() - i < 6 || s[i] != '\\' || s[i + 1] != 'u') return false;
      const long low = read_u4(s, i + 2);
      if (low < 0xdc00 || low > 0xdfff) return false;
      i += 6;
    }
  }
  return false;
}

bool read_number(std::string_view s, std::size_t& i) {
  const auto digit = [&] { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  if (i < s.size() && s[i] == '-') ++i;
  if (!digit()) return false;
  if (s[i] == '0') {
    ++i;
  } else {
    while (digit()) ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digit()) return false;
    while (digit()) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit()) return false;
    while (digit()) ++i;
  }
  return true;
}

bool read_literal(std::string_view s, std::size_t& i) {
  const std::string_view word = s[i] == 't' ? "true" : s[i] == 'f' ? "false" : "null";
  if (s.compare(i, word.size(), word) != 0) return false;
  i += word.size();
  return true;
}

// One JSON value at s[i] (not white space), inside containers `depth` levels deep; leaves i after
// it. Containers recurse, at most kMaxJsonDepth levels.
bool skip_value(std::string_view s, std::size_t& i, int depth) {
  if (i >= s.size()) return false;
  const char c = s[i];
  if (c == '"') {
    std::string_view ignored;
    bool escaped = false;
    return read_string(s, i, ignored, escaped);
  }
  if (c == '{' || c == '[') {
    if (depth + 1 > kMaxJsonDepth) return false;
    const char close = c == '{' ? '}' : ']';
    ++i;
    skip_space(s, i);
    if (i < s.size() && s[i] == close) {
      ++i;
      return true;
    }
    while (true) {
      if (c == '{') {
        std::string_view key;
        bool escaped = false;
        if (i >= s.size() || s[i] != '"' || !read_string(s, i, key, escaped)) return false;
        skip_space(s, i);
        if (i >= s.size() || s[i] != ':') return false;
        ++i;
        skip_space(s, i);
      }
      if (!skip_value(s, i, depth + 1)) return false;
      skip_space(s, i);
      if (i >= s.size()) return false;
      if (s[i] == close) {
        ++i;
        return true;
      }
      if (s[i] != ',') return false;
      ++i;
      skip_space(s, i);
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) return read_number(s, i);
  return read_literal(s, i);
}

}  // namespace

bool scan_flat_object_impl(std::string_view s, FieldVisitor visit, void* context) {
  std::size_t i = 0;
  skip_space(s, i);
  if (i >= s.size() || s[i] != '{') return false;
  ++i;
  skip_space(s, i);
  if (i < s.size() && s[i] == '}') {
    ++i;
  } else {
    while (true) {
      skip_space(s, i);
      if (i >= s.size() || s[i] != '"') return false;
      JsonField field{};
      if (!read_string(s, i, field.key, field.key_escaped)) return false;
      skip_space(s, i);
      if (i >= s.size() || s[i] != ':') return false;
      ++i;
      skip_space(s, i);
      if (i >= s.size()) return false;
      const std::size_t start = i;
      const char c = s[i];
      if (c == '"') {
        field.kind = JsonKind::kString;
        if (!read_string(s, i, field.value, field.value_escaped)) return false;
      } else {
        if (!skip_value(s, i, 1)) return false;
        field.value = s.substr(start, i - start);
        field.kind = c == '{' || c == '['                 ? JsonKind::kNested
                     : c == '-' || (c >= '0' && c <= '9') ? JsonKind::kNumber
                                                          : JsonKind::kLiteral;
      }
      visit(context, field);
      skip_space(s, i);
      if (i >= s.size()) return false;
      if (s[i] == ',') {
        ++i;
        continue;
      }
      if (s[i] == '}') {
        ++i;
        break;
      }
      return false;
    }
  }
  skip_space(s, i);
  return i == s.size();
}

std::string decode_json_string(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  const auto put = [&](unsigned long cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  };
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      out += raw[i];
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        long cp = read_u4(raw, i + 1);
        if (cp < 0) return out;  // not from the scanner
        i += 4;
        if (cp >= 0xd800 && cp <= 0xdbff && i + 6 < raw.size() && raw[i + 1] == '\\' &&
            raw[i + 2] == 'u') {
          const long low = read_u4(raw, i + 3);
          if (low >= 0xdc00 && low <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            i += 6;
          }
        }
        put(static_cast<unsigned long>(cp));
        break;
      }
      default:
        out += e;  // " \ /
    }
  }
  return out;
}

std::optional<std::uint64_t> parse_uint(const JsonField& field) {
  if (field.kind != JsonKind::kNumber) return std::nullopt;
  std::string_view text = field.value;
  if (text == "-0") return 0;
  if (text.empty() || text[0] == '-') return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;  // 1.5, 1e3
  return value;
}

std::optional<std::uint64_t> parse_hex(const JsonField& field) {
  if (field.kind != JsonKind::kString) return std::nullopt;
  std::string decoded;
  std::string_view text = field.value;
  if (field.value_escaped) text = decoded = decode_json_string(field.value);
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return std::nullopt;
  text.remove_prefix(2);
  for (const char c : text) {
    if (hex_digit(c) < 0) return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace cudapool::replay
