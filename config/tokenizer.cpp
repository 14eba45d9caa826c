// SPDX-License-Identifier: Apache-2.0
// config/tokenizer.cpp: the conf-string tokenizer (see tokenizer.h). No key knowledge here.
#include "config/tokenizer.h"

namespace cudapool::config {

bool is_conf_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

namespace {

bool punctuation_kind(char c, TokenKind& kind) {
  switch (c) {
    case ',':
      kind = TokenKind::kComma;
      return true;
    case ':':
      kind = TokenKind::kColon;
      return true;
    case '[':
      kind = TokenKind::kOpen;
      return true;
    case ']':
      kind = TokenKind::kClose;
      return true;
    default:
      return false;
  }
}

std::size_t count_tokens(std::string_view conf) {
  std::size_t count = 0;
  bool in_word = false;
  for (char c : conf) {
    TokenKind kind;
    if (punctuation_kind(c, kind)) {
      ++count;
      in_word = false;
    } else if (!is_conf_space(c) && !in_word) {
      ++count;
      in_word = true;
    }
  }
  return count;
}

}  // namespace

std::vector<Token> tokenize(std::string_view conf) {
  std::vector<Token> tokens;
  tokens.reserve(count_tokens(conf));  // one allocation, even for punctuation-heavy input
  std::string word;
  for (char c : conf) {
    TokenKind kind;
    if (punctuation_kind(c, kind)) {
      if (!word.empty()) {
        tokens.push_back({TokenKind::kWord, std::move(word)});
        word.clear();
      }
      tokens.push_back({kind, std::string(1, c)});
    } else if (!is_conf_space(c)) {
      word += c;
    }
  }
  if (!word.empty()) tokens.push_back({TokenKind::kWord, std::move(word)});
  return tokens;
}

std::string join_tokens(const std::vector<Token>& tokens, std::size_t begin, std::size_t end,
                        std::size_t limit) {
  std::string out;
  for (std::size_t i = begin; i < end && i < tokens.size() && out.size() <= limit; ++i) {
    const std::string& text = tokens[i].text;
    out.append(text, 0, limit + 1 - out.size());
  }
  return out;
}

}  // namespace cudapool::config
