// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_config_tokenizer.cpp: the conf tokenizer alone (PyTorch ConfigTokenizer rules).
#include <string>
#include <vector>

#include "config/tokenizer.h"
#include "tests/unit/catch.h"

namespace {

using cudapool::config::Token;
using cudapool::config::tokenize;
using cudapool::config::TokenKind;

std::vector<std::string> texts(const std::vector<Token>& tokens) {
  std::vector<std::string> out;
  for (const Token& t : tokens) out.push_back(t.text);
  return out;
}

}  // namespace

TEST_CASE("config: tokenizer makes each of , : [ ] a token of its own") {
  const auto tokens = tokenize("a:1,b:[2:3,>:4]");
  CHECK(texts(tokens) == std::vector<std::string>{"a", ":", "1", ",", "b", ":", "[", "2", ":", "3",
                                                  ",", ">", ":", "4", "]"});
  REQUIRE(tokens.size() == 15);
  CHECK(tokens[0].kind == TokenKind::kWord);
  CHECK(tokens[1].kind == TokenKind::kColon);
  CHECK(tokens[3].kind == TokenKind::kComma);
  CHECK(tokens[6].kind == TokenKind::kOpen);
  CHECK(tokens[14].kind == TokenKind::kClose);
  CHECK(tokens[11].kind == TokenKind::kWord);  // '>' is an ordinary word
}

TEST_CASE("config: tokenizer drops whitespace everywhere, even inside a word") {
  CHECK(texts(tokenize(" max split_size_mb :\t1 28 \n")) ==
        std::vector<std::string>{"maxsplit_size_mb", ":", "128"});
  CHECK(texts(tokenize("a\v\f\r:b")) == std::vector<std::string>{"a", ":", "b"});
}

TEST_CASE("config: tokenizer gives no tokens for empty or blank input") {
  CHECK(tokenize("").empty());
  CHECK(tokenize("  \t\n ").empty());
}

TEST_CASE("config: tokenizer keeps consecutive punctuation as separate tokens") {
  CHECK(texts(tokenize(",,[]::")) == std::vector<std::string>{",", ",", "[", "]", ":", ":"});
}

TEST_CASE("config: tokenizer keeps '=' and other characters inside words") {
  CHECK(texts(tokenize("max_split_size_mb=128")) ==
        std::vector<std::string>{"max_split_size_mb=128"});
}

TEST_CASE("config: join_tokens stops shortly after the limit") {
  const auto tokens = tokenize(std::string(1000, 'x') + ":" + std::string(1000, 'y'));
  const std::string joined = cudapool::config::join_tokens(tokens, 0, tokens.size(), 80);
  CHECK(joined.size() == 81);
  CHECK(cudapool::config::join_tokens(tokens, 1, 2, 80) == ":");
}
