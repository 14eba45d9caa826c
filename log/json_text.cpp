// SPDX-License-Identifier: Apache-2.0
// log/json_text.cpp: JSON text for the header and summary lines (see json_text.h): escaping,
// UTF-8 checking, numbers, hex strings, arrays, settings, time. No log lines here
// (format_lines.cpp, format_event.cpp).
#include "log/json_text.h"

#include <time.h>

namespace cudapool::log {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (RFC 3629), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void append_escaped_byte(std::string& out, unsigned char c) {
  out += "\\u00";
  out.push_back(kHexDigits[c >> 4]);
  out.push_back(kHexDigits[c & 15]);
}

}  // namespace

void append_u64(std::string& out, std::uint64_t v) {
  out += std::to_string(v);
}

void append_hex(std::string& out, std::uint64_t v) {
  const int digits = v == 0 ? 1 : (67 - __builtin_clzll(v)) / 4;
  out += "\"0x";
  for (int i = digits - 1; i >= 0; --i) out.push_back(kHexDigits[(v >> (4 * i)) & 15]);
  out.push_back('"');
}

void append_string_array(std::string& out, const std::vector<std::string>& items) {
  out.push_back('[');
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_json_string(out, items[i]);
  }
  out.push_back(']');
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20) {
            append_escaped_byte(out, c);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      append_escaped_byte(out, c);
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  out.push_back('"');
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

std::string iso8601_utc(std::uint64_t unix_ns) {
  const time_t seconds = static_cast<time_t>(unix_ns / 1000000000u);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[64];
  const std::size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string out(buf, n);
  const unsigned micros = static_cast<unsigned>(unix_ns % 1000000000u / 1000u);
  char frac[16];
  frac[0] = '.';
  for (int k = 6, v = static_cast<int>(micros); k >= 1; --k, v /= 10) {
    frac[k] = static_cast<char>('0' + v % 10);
  }
  out.append(frac, 7);
  out.push_back('Z');
  return out;
}

std::string setting_json(const config::EffectiveSetting& setting) {
  switch (setting.type) {
    case config::SettingType::kBool:
      return setting.value == "True" ? "true" : "false";
    case config::SettingType::kNumber:
      return setting.value;
    case config::SettingType::kText:
      break;
  }
  return json_string(setting.value);
}

}  // namespace cudapool::log
