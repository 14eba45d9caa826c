// tools/vocabulary/main.cpp: cudapool-vocabulary prints the log's vocabulary as JSON, made from
// the X-macro lists (pool/actions.def, log/shim_actions.def, pool/stats.def): the file
// scripts/cudapool_analysis/log_schema.json, which the Python tools read. The build target
// refresh-vocabulary rewrites that file; the test cli.vocabulary_schema fails when it differs from
// this program's output. Not installed; not a reader of logs.
#include <cstdio>
#include <string>
#include <string_view>

namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct List {
  bool first = true;
  void item(const std::string& text) {
    std::printf("%s\n    %s", first ? "" : ",", text.c_str());
    first = false;
  }
};

}  // namespace

int main() {
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
#include "pool/actions.def"
#include "log/shim_actions.def"
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
  std::printf("\n  ]\n}\n");
  return 0;
}
