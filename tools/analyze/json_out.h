// SPDX-License-Identifier: Apache-2.0
// tools/analyze/json_out.h: writes the engine's JSON document into a string, one compact line:
// objects and arrays with their commas, strings escaped (UTF-8 kept as it is), exact integers of
// any size (figure.h), doubles as the shortest text that reads back the same (with ".0" when it
// has no fraction, so that a reader takes it for a float), and JsonValues as parsed
// (json_value.h). Not here: what is written (report_json.h, page_json.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/analyze/figure.h"
#include "tools/analyze/json_value.h"

namespace cudapool::analyze {

class JsonOut {
 public:
  JsonOut& begin_object();
  JsonOut& end_object();
  JsonOut& begin_array();
  JsonOut& end_array();
  // The key of the next member of the object being written.
  JsonOut& key(std::string_view k);

  JsonOut& str(std::string_view s);
  JsonOut& num(Figure v);
  JsonOut& num(std::uint64_t v) { return num(static_cast<Figure>(v)); }
  JsonOut& num(int v) { return num(static_cast<Figure>(v)); }
  JsonOut& num(long long v) { return num(static_cast<Figure>(v)); }
  JsonOut& real(double v);
  JsonOut& boolean(bool v);
  JsonOut& null();
  JsonOut& value(const JsonValue& v);
  // Shorthands: a string, a number or null.
  JsonOut& opt(const std::optional<std::uint64_t>& v) { return v ? num(*v) : null(); }
  JsonOut& opt_real(const std::optional<double>& v) { return v ? real(*v) : null(); }
  JsonOut& opt_str(const std::optional<std::string>& v) { return v ? str(*v) : null(); }

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void comma();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace cudapool::analyze
