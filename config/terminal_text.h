// SPDX-License-Identifier: Apache-2.0
// config/terminal_text.h: text from a conf string made safe to print on one terminal line: the
// bytes a terminal would act on (C0 controls, DEL, C1 controls, bidirectional overrides) and bytes
// that are not UTF-8 are written as escapes, and a cut never splits a UTF-8 character. The parser
// keeps text as written; the one-line renderings (diagnostic.h) pass it through here. No parsing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cudapool::config {

// `text` with every byte a terminal could act on escaped: a C0 control or DEL as \xNN (\n, \t
// and \r by name), a C1 control (U+0080..U+009F) or a bidirectional control (U+200E, U+200F,
// U+202A..U+202E, U+2066..U+2069) as \uNNNN, a byte that does not start a well-formed UTF-8
// character as \xNN, and a backslash as \\ (so that an escape is never ambiguous). `quote`, when
// not '\0', is escaped too (\"). Printable ASCII and other well-formed UTF-8 pass unchanged.
std::string escape_for_terminal(std::string_view text, char quote = '\0');

// The length of the longest prefix of `text` of at most `max_bytes` bytes that does not end
// inside a well-formed UTF-8 character (a byte that is not UTF-8 counts as a character of its
// own).
std::size_t character_boundary(std::string_view text, std::size_t max_bytes);

}  // namespace cudapool::config
