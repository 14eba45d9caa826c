// SPDX-License-Identifier: Apache-2.0
// config/terminal_text.cpp: escaping and cutting conf text for a terminal (see terminal_text.h).
// UTF-8 is decoded as RFC 3629 defines it: no overlong forms, no surrogates, nothing above
// U+10FFFF. This file knows no keys and no diagnostics.
#include "config/terminal_text.h"

#include <cstdio>

namespace cudapool::config {

namespace {

struct Character {
  std::size_t length;  // bytes; 1 for a byte that is not UTF-8
  char32_t code;       // the code point; the byte itself when `valid` is false
  bool valid;
};

bool continuation(unsigned char b) {
  return (b & 0xc0) == 0x80;
}

// The character that starts at text[at] (at < text.size()).
Character character_at(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80) return {1, lead, true};
  std::size_t length = 0;
  char32_t code = 0;
  char32_t smallest = 0;  // below this the form is overlong
  if ((lead & 0xe0) == 0xc0) {
    length = 2, code = lead & 0x1f, smallest = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3, code = lead & 0x0f, smallest = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4, code = lead & 0x07, smallest = 0x10000;
  } else {
    return {1, lead, false};
  }
  if (text.size() - at < length) return {1, lead, false};
  for (std::size_t i = 1; i < length; ++i) {
    const auto b = static_cast<unsigned char>(text[at + i]);
    if (!continuation(b)) return {1, lead, false};
    code = (code << 6) | (b & 0x3f);
  }
  const bool surrogate = code >= 0xd800 && code <= 0xdfff;
  if (code < smallest || surrogate || code > 0x10ffff) return {1, lead, false};
  return {length, code, true};
}

// A code point a terminal or a text renderer acts on rather than shows.
bool acts_on_terminal(char32_t code) {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code == 0x200e || code == 0x200f ||
         (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

void append_escape(std::string& out, const char* format, unsigned value) {
  char buf[8];
  std::snprintf(buf, sizeof buf, format, value);
  out += buf;
}

}  // namespace

std::string escape_for_terminal(std::string_view text, char quote) {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    // Printable ASCII other than '\\' and the quote goes out in runs.
    std::size_t plain = at;
    while (plain < text.size() && text[plain] >= 0x20 && text[plain] < 0x7f &&
           text[plain] != '\\' && text[plain] != quote) {
      ++plain;
    }
    if (plain > at) {
      out.append(text, at, plain - at);
      at = plain;
      continue;
    }
    const Character c = character_at(text, at);
    const char byte = text[at];
    if (!c.valid) {
      append_escape(out, "\\x%02x", static_cast<unsigned>(c.code));
    } else if (byte == '\\' || (quote != '\0' && byte == quote)) {
      out += '\\';
      out += byte;
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte == '\r') {
      out += "\\r";
    } else if (acts_on_terminal(c.code)) {
      append_escape(out, c.code < 0x80 ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(c.code));
    } else {
      out.append(text, at, c.length);
    }
    at += c.length;
  }
  return out;
}

std::size_t character_boundary(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t next = at + character_at(text, at).length;
    if (next > max_bytes) break;
    at = next;
  }
  return at;
}

}  // namespace cudapool::config
