// SPDX-License-Identifier: Apache-2.0
// config/diagnostic.h: what the parser reports about a conf string: a Diagnostic for each problem
// (the pair was rejected, or is suspicious) and a Note for accepted input worth mentioning.
// These are plain values with a one-line rendering; nothing here prints or decides what to do.
// The fields hold text as written (cut by shorten()); only message() escapes it for a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cudapool::config {

// Longest key or value text (in bytes) kept in a Diagnostic; longer text is cut on a character
// boundary and ends in "...".
inline constexpr std::size_t kMaxQuotedChars = 80;

struct Diagnostic {
  std::string key;       // the key as written (shortened like value); "" for a stray comma
  std::string value;     // the value as written (whitespace dropped), shortened to 80 chars
  std::string accepted;  // human text of what the key accepts; "" when not about a value
  std::string kept;      // the value in force instead (user units), "" when nothing applies
  std::string detail;    // what exactly is wrong, when `accepted` alone does not say it

  // One line, no newline: "cudapool: Invalid conf pair: KEY:VALUE (DETAIL; accepted: ACCEPTED;
  // keeping: KEPT)" with empty parts left out. A Diagnostic with neither key nor value (the
  // "further N diagnostics suppressed" summary) renders as "cudapool: DETAIL". Control bytes,
  // bytes that are not UTF-8 and backslashes are escaped (escape_for_terminal): \x1b, \\.
  std::string message() const;
};

struct Note {
  std::string key;   // the key the note is about (table name), or "" for a summary
  std::string text;  // a sentence without the prefix

  // One line, no newline: "cudapool: note: TEXT", escaped like Diagnostic::message().
  std::string message() const;
};

// `text` cut to at most kMaxQuotedChars bytes, the last three being "..." when it was cut; the cut
// never splits a UTF-8 character (terminal_text.h character_boundary).
std::string shorten(std::string_view text);

}  // namespace cudapool::config
