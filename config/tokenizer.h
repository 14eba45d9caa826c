// SPDX-License-Identifier: Apache-2.0
// config/tokenizer.h: splits a conf string into tokens the way PyTorch 2.11's ConfigTokenizer
// does: each of , : [ ] is a token of its own, whitespace is dropped everywhere (even inside a
// word), and every other run of characters is one word. It knows nothing about keys or values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cudapool::config {

enum class TokenKind : std::uint8_t { kWord, kComma, kColon, kOpen, kClose };

struct Token {
  TokenKind kind;
  std::string text;  // the word, or the single punctuation character
};

// Whitespace as C's isspace sees it in the "C" locale: space, \t, \n, \v, \f, \r.
bool is_conf_space(char c);

// Tokens in input order; empty for an empty or all-whitespace string. Linear in conf.size().
std::vector<Token> tokenize(std::string_view conf);

// The tokens' text concatenated, stopping once the result passes `limit` characters (so the
// caller can shorten it without building a huge string).
std::string join_tokens(const std::vector<Token>& tokens, std::size_t begin, std::size_t end,
                        std::size_t limit);

}  // namespace cudapool::config
