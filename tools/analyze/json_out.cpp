// SPDX-License-Identifier: Apache-2.0
// tools/analyze/json_out.cpp: see json_out.h.
#include "tools/analyze/json_out.h"

#include <charconv>
#include <cstdio>

namespace cudapool::analyze {

void JsonOut::comma() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonOut& JsonOut::begin_object() {
  comma();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

JsonOut& JsonOut::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}

JsonOut& JsonOut::begin_array() {
  comma();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

JsonOut& JsonOut::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}

JsonOut& JsonOut::key(std::string_view k) {
  str(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonOut& JsonOut::str(std::string_view s) {
  comma();
  out_ += '"';
  for (const char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += c;
    } else if (c == '\n') {
      out_ += "\\n";
    } else if (c == '\t') {
      out_ += "\\t";
    } else if (c == '\r') {
      out_ += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out_ += buf;
    } else {
      out_ += c;
    }
  }
  out_ += '"';
  return *this;
}

JsonOut& JsonOut::num(Figure v) {
  comma();
  out_ += figure_text(v);
  return *this;
}

JsonOut& JsonOut::real(double v) {
  comma();
  if (v != v || v == 1.0 / 0.0 || v == -1.0 / 0.0) {
    out_ += "null";  // never a figure of the engine's; JSON has no such numbers
    return *this;
  }
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string_view text(buf, static_cast<std::size_t>(end - buf));
  out_ += text;
  if (text.find_first_of(".e") == std::string_view::npos) out_ += ".0";
  return *this;
}

JsonOut& JsonOut::boolean(bool v) {
  comma();
  out_ += v ? "true" : "false";
  return *this;
}

JsonOut& JsonOut::null() {
  comma();
  out_ += "null";
  return *this;
}

JsonOut& JsonOut::value(const JsonValue& v) {
  switch (v.type) {
    case JsonValue::Type::kNull:
      return null();
    case JsonValue::Type::kBool:
      return boolean(v.boolean);
    case JsonValue::Type::kNumber:
      comma();
      out_ += v.is_integer() ? v.integer_text() : v.text;
      return *this;
    case JsonValue::Type::kString:
      return str(v.text);
    case JsonValue::Type::kArray:
      begin_array();
      for (const JsonValue& x : v.items) value(x);
      return end_array();
    case JsonValue::Type::kObject:
      begin_object();
      for (const auto& [k, x] : v.members) {
        key(k);
        value(x);
      }
      return end_object();
  }
  return *this;
}

}  // namespace cudapool::analyze
