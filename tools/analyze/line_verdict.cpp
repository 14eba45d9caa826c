// SPDX-License-Identifier: Apache-2.0
// tools/analyze/line_verdict.cpp: see line_verdict.h. The decoder below follows CPython 3.11's
// Modules/_json.c (scan_once_unicode, _parse_object_unicode, _parse_array_unicode,
// scanstring_unicode, _match_number_unicode) for where it stops and what it says.
#include "tools/analyze/line_verdict.h"

#include <algorithm>
#include <cstdio>

#include "tools/analyze/json_value.h"

namespace cudapool::analyze {

namespace {

constexpr int kMaxDepth = 64;  // docs/log-format.md: a line nests at most 64 levels

struct Fault {
  std::string message;  // empty: none
  std::size_t at = 0;   // byte index in the text
  bool positioned = true;
};

// A line as Python's decoder sees it: with its newline, when it has one (not held: read as a
// '\n' one past the line's end).
struct Text {
  std::string_view line;
  bool newline;
  std::size_t size() const { return line.size() + (newline ? 1 : 0); }
  char operator[](std::size_t i) const { return i < line.size() ? line[i] : '\n'; }
  bool starts(std::size_t i, std::string_view w) const {
    return i <= line.size() && line.substr(i, w.size()) == w;
  }
};

class Decoder {
 public:
  explicit Decoder(Text text) : s_(text), n_(text.size()) {}

  // The whole text as json.loads() reads it: white space, one value, white space.
  Fault decode() {
    std::size_t i = skip(0);
    std::size_t end = 0;
    if (!value(i, 0, &end)) return fault_;
    end = skip(end);
    if (end != n_) return Fault{"Extra data", end};
    return Fault{};
  }
  int max_depth() const { return max_depth_; }
  bool top_is_object() const { return top_object_; }

 private:
  bool ws(std::size_t i) const {
    return i < n_ && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\n' || s_[i] == '\r');
  }
  std::size_t skip(std::size_t i) const {
    while (ws(i)) ++i;
    return i;
  }
  char at(std::size_t i) const { return i < n_ ? s_[i] : '\0'; }
  bool fail(const char* message, std::size_t i, bool positioned = true) {
    fault_ = Fault{message, i, positioned};
    return false;
  }
  bool word(std::size_t i, std::string_view w) const { return s_.starts(i, w); }

  bool value(std::size_t i, int depth, std::size_t* next) {
    if (i >= n_) return fail("Expecting value", i);
    const char c = s_[i];
    if (depth == 0) top_object_ = c == '{';
    switch (c) {
      case '"':
        return string(i + 1, next);
      case '{':
      case '[':
        if (depth + 1 > kPythonMaxDepth) return fail("nested too deeply", i, false);
        if (depth + 1 > max_depth_) max_depth_ = depth + 1;
        return c == '{' ? object(i + 1, depth + 1, next) : array(i + 1, depth + 1, next);
      case 'n':
        if (word(i, "null")) return *next = i + 4, true;
        break;
      case 't':
        if (word(i, "true")) return *next = i + 4, true;
        break;
      case 'f':
        if (word(i, "false")) return *next = i + 5, true;
        break;
      case 'N':
        if (word(i, "NaN")) return fail("NaN is not JSON", i, false);
        break;
      case 'I':
        if (word(i, "Infinity")) return fail("Infinity is not JSON", i, false);
        break;
      case '-':
        if (word(i, "-Infinity")) return fail("-Infinity is not JSON", i, false);
        break;
      default:
        break;
    }
    return number(i, next);
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  bool number(std::size_t start, std::size_t* next) {
    std::size_t i = start;
    if (at(i) == '-') {
      ++i;
      if (i >= n_) return fail("Expecting value", start);
    }
    if (at(i) >= '1' && at(i) <= '9') {
      ++i;
      while (i < n_ && digit(s_[i])) ++i;
    } else if (at(i) == '0') {
      ++i;
    } else {
      return fail("Expecting value", start);
    }
    if (i + 1 < n_ && s_[i] == '.' && digit(s_[i + 1])) {
      i += 2;
      while (i < n_ && digit(s_[i])) ++i;
    }
    if (i + 1 < n_ && (s_[i] == 'e' || s_[i] == 'E')) {
      const std::size_t e = i++;
      if (i + 1 < n_ && (s_[i] == '-' || s_[i] == '+')) ++i;
      while (i < n_ && digit(s_[i])) ++i;
      if (!digit(s_[i - 1])) i = e;
    }
    *next = i;
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool string(std::size_t end, std::size_t* next) {
    const std::size_t begin = end - 1;
    for (;;) {
      std::size_t i = end;
      for (; i < n_; ++i) {
        const unsigned char d = static_cast<unsigned char>(s_[i]);
        if (d == '"' || d == '\\') break;
        if (d <= 0x1f) return fail("Invalid control character at", i);
      }
      if (i >= n_) return fail("Unterminated string starting at", begin);
      if (s_[i] == '"') {
        *next = i + 1;
        return true;
      }
      ++i;  // the backslash
      if (i >= n_) return fail("Unterminated string starting at", begin);
      const char e = s_[i];
      if (e != 'u') {
        end = i + 1;
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
            e != 't') {
          return fail("Invalid \\escape", end - 2);
        }
        continue;
      }
      ++i;
      end = i + 4;
      if (end >= n_) return fail("Invalid \\uXXXX escape", i - 1);
      unsigned c = 0;
      for (; i < end; ++i) {
        const int h = hex(s_[i]);
        if (h < 0) return fail("Invalid \\uXXXX escape", end - 5);
        c = c << 4 | static_cast<unsigned>(h);
      }
      if (c >= 0xd800 && c <= 0xdbff && end + 6 < n_ && s_[i] == '\\' && s_[i + 1] == 'u') {
        i += 2;
        end += 6;
        unsigned c2 = 0;
        for (; i < end; ++i) {
          const int h = hex(s_[i]);
          if (h < 0) return fail("Invalid \\uXXXX escape", end - 5);
          c2 = c2 << 4 | static_cast<unsigned>(h);
        }
        if (!(c2 >= 0xdc00 && c2 <= 0xdfff)) end -= 6;
      }
    }
  }

  bool object(std::size_t i, int depth, std::size_t* next) {
    i = skip(i);
    if (at(i) != '}' || i >= n_) {
      for (;;) {
        if (i >= n_ || s_[i] != '"') {
          return fail("Expecting property name enclosed in double quotes", i);
        }
        if (!string(i + 1, &i)) return false;
        i = skip(i);
        if (i >= n_ || s_[i] != ':') return fail("Expecting ':' delimiter", i);
        i = skip(i + 1);
        if (!value(i, depth, &i)) return false;
        i = skip(i);
        if (i < n_ && s_[i] == '}') break;
        if (i >= n_ || s_[i] != ',') return fail("Expecting ',' delimiter", i);
        i = skip(i + 1);
      }
    }
    *next = i + 1;
    return true;
  }

  bool array(std::size_t i, int depth, std::size_t* next) {
    i = skip(i);
    if (i >= n_ || s_[i] != ']') {
      for (;;) {
        if (!value(i, depth, &i)) return false;
        i = skip(i);
        if (i < n_ && s_[i] == ']') break;
        if (i >= n_ || s_[i] != ',') return fail("Expecting ',' delimiter", i);
        i = skip(i + 1);
      }
    }
    *next = i + 1;
    return true;
  }

  Text s_;
  std::size_t n_;
  Fault fault_;
  int max_depth_ = 0;
  bool top_object_ = false;
};

// Whether a valid JSON text has a \u escape of a surrogate that is not half of a pair: a high
// one not followed at once by a low one (jsonline.lone_surrogate).
bool lone_surrogate(std::string_view s) {
  std::size_t low_at = std::string_view::npos;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != '\\') continue;
    long u = -1;
    const std::size_t start = i;
    if (s[i + 1] == 'u' && i + 5 < s.size() + 0) {
      u = 0;
      for (std::size_t k = 2; k < 6; ++k) {
        const char c = s[i + k];
        const int h = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (h < 0) {
          u = -1;
          break;
        }
        u = u * 16 + h;
      }
    }
    const std::size_t end = u >= 0 ? i + 6 : i + 2;
    if (low_at != std::string_view::npos) {
      if (start != low_at || !(u >= 0xdc00 && u <= 0xdfff)) return true;
      low_at = std::string_view::npos;
    } else if (u >= 0xd800 && u <= 0xdbff) {
      low_at = end;
    } else if (u >= 0xdc00 && u <= 0xdfff) {
      return true;
    }
    i = end - 1;
  }
  return low_at != std::string_view::npos;
}

// The character index of a byte index of valid UTF-8 text (past its end: its length).
std::size_t char_index(std::string_view text, std::size_t byte) {
  return char_count(text.substr(0, std::min(byte, text.size())));
}

}  // namespace

std::size_t invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
      return i + k < s.size() && static_cast<unsigned char>(s[i + k]) >= lo &&
             static_cast<unsigned char>(s[i + k]) <= hi;
    };
    std::size_t n = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      n = cont(1) ? 2 : 0;
    } else if (c == 0xe0) {
      n = cont(1, 0xa0) && cont(2) ? 3 : 0;
    } else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
      n = cont(1) && cont(2) ? 3 : 0;
    } else if (c == 0xed) {
      n = cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
    } else if (c == 0xf0) {
      n = cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    } else if (c >= 0xf1 && c <= 0xf3) {
      n = cont(1) && cont(2) && cont(3) ? 4 : 0;
    } else if (c == 0xf4) {
      n = cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
    }
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

LineVerdict judge_line(std::string_view line, bool has_newline) {
  LineVerdict out;
  if (const std::size_t bad = invalid_utf8_at(line); bad != std::string_view::npos) {
    out.verdict = Verdict::kMalformed;
    out.why = "not valid UTF-8 (byte " + std::to_string(bad) + ")";
    return out;
  }
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
    out.verdict = Verdict::kBlank;
    return out;
  }
  Decoder decoder(Text{line, has_newline});
  const Fault fault = decoder.decode();
  out.verdict = Verdict::kMalformed;
  if (!fault.message.empty()) {
    out.why = "not JSON (" + fault.message;
    out.at_end = fault.positioned && fault.at >= line.size();
    if (fault.positioned) {
      // The line holds no newline but its last: a fault past it is on the next line.
      const std::size_t pos = char_index(line, fault.at) + (fault.at > line.size() ? 1 : 0);
      const bool next_line = fault.at > line.size();
      const std::size_t line_no = next_line ? 2 : 1;
      const std::size_t column = next_line ? pos - char_count(line) : pos + 1;
      char buf[96];
      std::snprintf(buf, sizeof buf, ": line %zu column %zu (char %zu)", line_no, column, pos);
      out.why += buf;
    }
    out.why += ")";
  } else if (!decoder.top_is_object()) {
    out.why = "not a JSON object";
  } else if (line.find("\\u") != std::string_view::npos && lone_surrogate(line)) {
    out.why = "a string with a lone surrogate escape";
  } else if (decoder.max_depth() > kMaxDepth) {
    out.why = "nested more than " + std::to_string(kMaxDepth) + " levels deep";
  } else {
    // A line Python's decoder takes whole and the scanner refused: none should be (the two
    // follow one rule); said as what it is rather than passed as valid.
    out.why = "not JSON (refused by the strict scanner)";
  }
  return out;
}

}  // namespace cudapool::analyze
