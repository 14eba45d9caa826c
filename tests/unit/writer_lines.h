// SPDX-License-Identifier: Apache-2.0
// tests/unit/writer_lines.h: lines for the tests of the readers' fast paths for the writers' event
// lines (test_analyze_fast_line.cpp, test_replay_fast_line.cpp): the writer's own lines for every
// action with and without each optional field, bench/make_training_log's lines, the lines of the
// fixtures under tests/ and examples/, and each line mutated (keys reordered, white space, escapes,
// leading zeros, long hex strings, dev and ctx out of range, keys repeated or missing, huge
// numbers, random edits). Not here: what a test checks of them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "log/format.h"
#include "log/record.h"
#include "tests/unit/catch.h"

namespace cudapool::test {

// The writer's lines (without newline): every action, with and without each optional field.
inline std::vector<std::string> written_lines() {
  using log::LogAction;
  std::vector<std::string> out;
  for (int a = 0; a <= static_cast<int>(log::kLastLogAction); ++a) {
    for (int variant = 0; variant < 6; ++variant) {
      log::LogRecord r;
      r.seq = 1 + variant * 1000003ull;
      r.t_ns = variant == 5 ? 9999999999999999999ull : 123456789012ull + variant;
      r.tid = 4242;
      r.device = variant == 3 ? 65535 : variant;
      r.ctx = static_cast<std::uint8_t>(variant == 4 ? 255 : variant % 2);
      r.action = static_cast<LogAction>(a);
      r.ptr = variant == 2 ? 0 : 0x7ff01e800000ull + variant;
      r.size = variant == 1 ? 0 : 1ull << (20 + variant);
      r.block_size = variant % 2 ? 0 : r.size + 512;
      r.segment = variant % 3 ? 0x7ff01e800000ull : 0;
      r.stream = variant == 4 ? 0xdeadbeefull : 0;
      r.cache_hit = variant % 2 == 0;
      r.latency_ns = variant == 3 ? 0 : 361;
      r.error = variant == 5 ? 2 : 0;
      r.frames = static_cast<std::uint8_t>(variant);
      for (int i = 0; i < variant; ++i) r.backtrace[i] = 0x7fee8ce146f3ull + i;
      if (r.action == LogAction::kOom) r.oom = log::OomFigures{};
      char text[log::kMaxEventLine];
      const std::size_t n = log::format_event(r, text, sizeof text);
      REQUIRE(n > 1);
      out.emplace_back(text, n - 1);  // without its newline
    }
  }
  return out;
}

inline void add_lines(std::istream& in, std::vector<std::string>& out) {
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
}

// bench/make_training_log's lines (its header and summary too), with backtraces and without.
inline std::vector<std::string> generated_lines() {
  std::vector<std::string> out;
  for (const char* options : {"--events 20000", "--events 5000 --backtrace 6 --vary-shapes"}) {
    const std::string command =
        std::string(CUDAPOOL_BINARY_DIR) + "/bench/make_training_log " + options + " - 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string text;
    char buffer[65536];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, n);
    REQUIRE(pclose(pipe) == 0);
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
      out.push_back(text.substr(start, end - start));
    }
  }
  REQUIRE(out.size() > 25000);
  return out;
}

// The lines of the logs under tests/ and examples/ (fixtures of valid and malformed lines).
inline std::vector<std::string> fixture_lines() {
  std::vector<std::string> out;
  const std::string root = CUDAPOOL_SOURCE_DIR;
  for (const char* path :
       {"/tests/cli/fixtures/line_rules.jsonl", "/tests/cli/fixtures/malformed.jsonl",
        "/tests/cli/fixtures/normal.jsonl", "/tests/cli/fixtures/expandable.jsonl",
        "/tests/cli/fixtures/killed.jsonl", "/tests/cli/fixtures/viewers.jsonl",
        "/examples/logs/training-loop.jsonl"}) {
    std::ifstream in(root + path);
    REQUIRE(in);
    add_lines(in, out);
  }
  return out;
}

// A compact line's top-level fields as written ("key":value), or nothing for another line.
inline std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  if (line.size() < 2 || line.front() != '{' || line.back() != '}') return out;
  int depth = 0;
  bool in_string = false;
  std::size_t start = 1;
  for (std::size_t i = 1; i + 1 < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(line.substr(start, line.size() - 1 - start));
  return out;
}

inline std::string join_fields(const std::vector<std::string>& fields) {
  std::string line = "{";
  for (std::size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + fields[i];
  return line + "}";
}

// The line's mutations: its fields reordered, one missing, one repeated, one's value replaced by
// forms near the writers' (leading zeros, huge numbers, long or upper-case hex, escapes, out of
// range), white space added.
inline std::vector<std::string> mutations(const std::string& line) {
  std::vector<std::string> out;
  const std::vector<std::string> fields = split_fields(line);
  if (fields.empty()) return out;
  std::vector<std::string> f = fields;
  std::reverse(f.begin(), f.end());
  out.push_back(join_fields(f));
  f = fields;
  std::rotate(f.begin(), f.begin() + 1, f.end());
  out.push_back(join_fields(f));
  const std::vector<std::string> values = {"0",
                                           "00",
                                           "01",
                                           "007",
                                           "-0",
                                           "-1",
                                           "1.0",
                                           "1e3",
                                           "1E3",
                                           "65535",
                                           "65536",
                                           "255",
                                           "256",
                                           "9999999999999999999",
                                           "18446744073709551615",
                                           "18446744073709551616",
                                           "123456789012345678901234567890",
                                           "true",
                                           "false",
                                           "null",
                                           "\"alloc\"",
                                           "\"summary\"",
                                           "\"free_requested\"",
                                           "\"Alloc\"",
                                           "\"\"",
                                           "\"made_up\"",
                                           "\"0x0\"",
                                           "\"0X10\"",
                                           "\"0xABCdef\"",
                                           "\"0x\"",
                                           "\"0x10000000000000000\"",
                                           "\"0x00000000000000001\"",
                                           "\"0xffffffffffffffff\"",
                                           "\"\\u0030x10\"",
                                           "\"0x1\\u0030\"",
                                           "\"al\\u006coc\"",
                                           "[]",
                                           "[\"0x1\",\"0x2\"]",
                                           "[\"0x1\",]",
                                           "{}",
                                           "\"text\"",
                                           " 1",
                                           "1 "};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    f = fields;
    f.erase(f.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(join_fields(f));  // missing
    f = fields;
    f.push_back(fields[i]);
    out.push_back(join_fields(f));  // repeated, the same value
    const std::size_t colon = fields[i].find("\":");
    const std::string key = fields[i].substr(0, colon + 2);
    for (const std::string& v : values) {
      f = fields;
      f[i] = key + v;
      out.push_back(join_fields(f));
      f = fields;
      f.push_back(key + v);
      out.push_back(join_fields(f));  // repeated, another value last
    }
    f = fields;
    f[i] = "\"\\u00" + std::string(1, "0123456789abcdef"[key[1] >> 4]) +
           std::string(1, "0123456789abcdef"[key[1] & 15]) + fields[i].substr(2);
    out.push_back(join_fields(f));  // an escape in the key
    f = fields;
    f[i] = key + " " + fields[i].substr(colon + 2);
    out.push_back(join_fields(f));  // a space
  }
  out.push_back(" " + line);
  out.push_back(line + " ");
  out.push_back(line + "\r");
  out.push_back(line.substr(0, line.size() - 1) + ",\"xyz\":1}");
  return out;
}

// The line with 1 to 3 random edits (seeded by the caller's rng).
inline std::string edited(std::string line, std::mt19937& rng) {
  const std::string bytes = "0123456789abcdefxX\"{}[],:-.e \\tu";
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < edits && !line.empty(); ++k) {
    const std::size_t at = rng() % line.size();
    const char c = bytes[rng() % bytes.size()];
    switch (rng() % 3) {
      case 0:
        line[at] = c;
        break;
      case 1:
        line.insert(at, 1, c);
        break;
      default:
        line.erase(at, 1);
        break;
    }
  }
  return line;
}

// The lines to mutate: the writer's, and every 997th of make_training_log's (generated).
inline std::vector<std::string> mutation_bases(const std::vector<std::string>& generated) {
  std::vector<std::string> bases = written_lines();
  for (std::size_t i = 0; i < generated.size(); i += 997) bases.push_back(generated[i]);
  return bases;
}

// Every mutation of every base through taken(line), which says whether the fast path took it
// (checking that it agrees): some are taken, not all.
template <class Taken>
void check_mutations(const std::vector<std::string>& bases, Taken&& taken) {
  std::size_t mutated = 0, taken_mutated = 0;
  for (const std::string& base : bases) {
    for (const std::string& line : mutations(base)) {
      ++mutated;
      taken_mutated += taken(line) ? 1 : 0;
    }
  }
  CHECK(taken_mutated > 0);
  CHECK(taken_mutated < mutated);
}

}  // namespace cudapool::test
