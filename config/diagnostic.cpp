// SPDX-License-Identifier: Apache-2.0
// config/diagnostic.cpp: the one-line renderings of Diagnostic and Note, escaped for a terminal
// (terminal_text.h), and shorten(). No parsing here.
#include "config/diagnostic.h"

#include "config/terminal_text.h"

namespace cudapool::config {

std::string shorten(std::string_view text) {
  if (text.size() <= kMaxQuotedChars) return std::string(text);
  // Built in one append (GCC 12 with link-time optimization warns falsely about
  // std::string(string_view) followed by +=).
  std::string out;
  out.reserve(kMaxQuotedChars);
  out.append(text.data(), character_boundary(text, kMaxQuotedChars - 3)).append("...");
  return out;
}

std::string Diagnostic::message() const {
  if (key.empty() && value.empty()) return escape_for_terminal("cudapool: " + detail);
  std::string out = "cudapool: Invalid conf pair: ";
  if (key.empty()) {
    out += value;
  } else {
    out += key;
    if (!value.empty()) out += ":" + value;
  }
  std::string reasons;
  auto add = [&reasons](std::string_view label, const std::string& part) {
    if (part.empty()) return;
    if (!reasons.empty()) reasons += "; ";
    reasons += label;
    reasons += part;
  };
  add("", detail);
  add("accepted: ", accepted);
  add("keeping: ", kept);
  if (!reasons.empty()) out += " (" + reasons + ")";
  return escape_for_terminal(out);
}

std::string Note::message() const {
  return escape_for_terminal("cudapool: note: " + text);
}

}  // namespace cudapool::config
