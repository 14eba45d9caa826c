// SPDX-License-Identifier: Apache-2.0
// config/keys.h: the one table of conf keys: name, alias, value kind, accepted values (human
// text), default (user units), PyTorch-only flag, and the functions that read a value into
// Options, render it back, and remark on a value taken but suspicious. The parser, describe() and
// the tool all iterate this table; no other file lists keys. This file does not split the string
// (tokenizer.h) or walk pairs (parse.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/options.h"
#include "config/tokenizer.h"

namespace cudapool::config {

enum class ValueKind : std::uint8_t {
  kBool,              // True or False, exactly
  kMebibytes,         // an unsigned integer number of MiB
  kCount,             // an unsigned integer count
  kFraction,          // a decimal number
  kChoice,            // one word out of a fixed set
  kRoundupDivisions,  // a power of two, or a [MiB:divisions, ..., >:divisions] list
};

// Whether a bracketed list is a legal value for this kind (only kRoundupDivisions).
bool accepts_list(ValueKind kind);

// A value as the parser found it: one word, or the tokens strictly between '[' and ']'.
struct RawValue {
  bool is_list = false;
  std::string_view word;                       // when !is_list
  const std::vector<Token>* tokens = nullptr;  // when is_list: (*tokens)[begin, end)
  std::size_t begin = 0;
  std::size_t end = 0;
};

// What was wrong with a value, one string per problem, each a Diagnostic detail ("" when the
// key's accepted text says it all, e.g. a number out of range). Empty: the value was taken.
using Problems = std::vector<std::string>;

// Reads `value`; when it adds no problem it stores the value in `options` (PyTorch-only keys
// store nothing), and when it adds any it leaves `options` untouched.
using ApplyFn = void (*)(const RawValue& value, Options& options, Problems& problems);
// The key's current value in user units ("unlimited", "128", "True", "off", ...).
using RenderFn = std::string (*)(const Options& options);
// After `value` was taken: what about it is suspicious (at most `max_remarks` strings, each a
// Diagnostic detail); returns how many more it found. The value stays in force, as with a key
// given twice.
using RemarkFn = std::size_t (*)(const RawValue& value, Problems& remarks, std::size_t max_remarks);

struct KeyInfo {
  std::string_view name;   // as the conf string spells it
  std::string_view alias;  // a second accepted spelling (HIP name), or ""
  ValueKind kind;
  std::string_view accepted;      // e.g. "an integer >= 20 (MiB)"
  std::string_view default_text;  // the default in user units (PyTorch's, for PyTorch-only keys)
  bool pytorch_only;              // validated like PyTorch, then ignored (reported as a Note)
  ApplyFn apply;
  RenderFn render;             // PyTorch-only keys render as "ignored"
  bool cudapool_only = false;  // cudapool's own key: PyTorch rejects it in its conf string
  RemarkFn remark = nullptr;   // remarks on a value that was taken, for the keys that have any
};

// All keys, in the order describe() lists them.
std::span<const KeyInfo> key_table();

// The row whose name or alias is exactly `name` (case-sensitive), or nullptr.
const KeyInfo* find_key(std::string_view name);

// The table name closest to `unknown` by edit distance, if that distance is <= 3 (or the two
// differ only in letter case); "" otherwise. Cheap even for a very long `unknown`.
std::string_view closest_key(std::string_view unknown);

}  // namespace cudapool::config
