// SPDX-License-Identifier: Apache-2.0
// tools/vocabulary/main.cpp: cudapool-vocabulary prints the log's vocabulary as JSON, made from
// the X-macro lists (pool/actions.def, log/shim_actions.def, pool/stats.def, the fields of the
// lines of log/fields.def, and the compressed formats of log/compressions.def): the file
// scripts/cudapool_analysis/log_schema.json, which the Python tools read. The build target
// refresh-vocabulary rewrites that file; the test cli.vocabulary_schema fails when it differs from
// this program's output. --help, --version and usage errors as every tool's (tools/cli_common.h).
// Not installed; not a reader of logs.
#include <cstdio>
#include <string>
#include <string_view>

#include "log/fields.h"
#include "tools/cli_common.h"

namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// "1f8b": the bytes as lowercase hex digits.
std::string hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    out += kDigits[static_cast<unsigned char>(c) >> 4];
    out += kDigits[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

struct List {
  bool first = true;
  void item(const std::string& text) {
    std::printf("%s\n    %s", first ? "" : ",", text.c_str());
    first = false;
  }
};

}  // namespace

const cudapool::cli::Command kCommand = {
    "cudapool-vocabulary", "usage: cudapool-vocabulary",
    "  Prints the log's vocabulary (actions, statistics, fields, compressions) as JSON: the\n"
    "  file scripts/cudapool_analysis/log_schema.json (ninja refresh-vocabulary rewrites it).\n"
    "  --help, --version  this text; the version\n"
    "  Exit status: 0; 2 a usage error.\n"};

int main(int argc, char** argv) {
  if (argc > 1) {
    int status = 0;
    if (argc == 2 && cudapool::cli::standard_option(kCommand, argv[1], &status)) return status;
    const std::string arg = argv[1];
    return cudapool::cli::usage_error(
        kCommand,
        (arg.size() > 1 && arg[0] == '-' ? "unknown option " : "no arguments, not ") + arg);
  }
  std::printf(
      "{\n  \"generated_by\": \"cudapool-vocabulary (tools/vocabulary/main.cpp): do not edit\",\n");
  std::printf("  \"actions\": [");
  List actions;
#define CUDAPOOL_POOL_ACTION(id, name, meaning) \
  actions.item("{\"name\": " + quoted(name) +   \
               ", \"origin\": \"pool\", \"meaning\": " + quoted(meaning) + "}");
#define CUDAPOOL_SHIM_ACTION(id, name, meaning) \
  actions.item("{\"name\": " + quoted(name) +   \
               ", \"origin\": \"shim\", \"meaning\": " + quoted(meaning) + "}");
  // The pool's actions first (log::LogAction's order), not sorted.
  // clang-format off
#include "pool/actions.def"
#include "log/shim_actions.def"
  // clang-format on
  std::printf("\n  ],\n  \"stat_arrays\": [");
  List arrays;
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning)               \
  arrays.item("{\"name\": \"" #member "\", \"label\": " + quoted(label) + \
              ", \"format\": \"" #format "\", \"meaning\": " + quoted(meaning) + "}");
#define CUDAPOOL_STAT_SINGLE(member, label, meaning)
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning)
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
  std::printf("\n  ],\n  \"stat_singles\": [");
  List singles;
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning)
#define CUDAPOOL_STAT_SINGLE(member, label, meaning)                       \
  singles.item("{\"name\": \"" #member "\", \"label\": " + quoted(label) + \
               ", \"meaning\": " + quoted(meaning) + "}");
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning)
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
  std::printf("\n  ],\n  \"stat_counters\": [");
  List counters;
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning)
#define CUDAPOOL_STAT_SINGLE(member, label, meaning)
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning)                                      \
  counters.item("{\"name\": \"" #member "\", \"combine\": \"" #combine "\", \"meaning\": " + \
                quoted(meaning) + "}");
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
  std::printf("\n  ],\n  \"event_fields\": [");
  List event_fields;
  for (const auto& f : cudapool::log::kEventFields) {
    std::string actions = "[";
    for (std::string_view list = f.actions; !list.empty();) {
      const std::size_t space = list.find(' ');
      if (actions.size() > 1) actions += ", ";  // appended, not +: GCC 12's -Wstringop-overflow
      actions += quoted(list.substr(0, space));
      list = space == std::string_view::npos ? std::string_view() : list.substr(space + 1);
    }
    event_fields.item("{\"name\": " + quoted(f.name) +
                      ", \"kind\": " + quoted(cudapool::log::field_kind_text(f.kind)) +
                      ", \"presence\": " + quoted(cudapool::log::field_presence_text(f.presence)) +
                      ", \"actions\": " + actions + "], \"meaning\": " + quoted(f.meaning) + "}");
  }
  std::printf("\n  ],\n  \"line_fields\": [");
  List line_fields;
  for (const auto& f : cudapool::log::kLineFields) {
    line_fields.item("{\"part\": " + quoted(cudapool::log::line_part_text(f.part)) +
                     ", \"name\": " + quoted(f.name) +
                     ", \"kind\": " + quoted(cudapool::log::field_kind_text(f.kind)) +
                     ", \"presence\": " + quoted(cudapool::log::field_presence_text(f.presence)) +
                     ", \"meaning\": " + quoted(f.meaning) + "}");
  }
  std::printf("\n  ],\n  \"compressions\": [");
  List compressions;
#define CUDAPOOL_COMPRESSION(id, name, magic, decompressor, read)                                \
  compressions.item("{\"name\": " + quoted(name) + ", \"magic\": \"" +                           \
                    hex(std::string_view(magic, sizeof(magic) - 1)) + "\", \"decompressor\": " + \
                    quoted(decompressor) + ", \"read\": " + (read ? "true" : "false") + "}");
#include "log/compressions.def"
#undef CUDAPOOL_COMPRESSION
  std::printf("\n  ]\n}\n");
  return 0;
}
