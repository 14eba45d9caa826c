// SPDX-License-Identifier: Apache-2.0
// tools/tune/main.cpp: the cudapool-tune command line (`cudapool tune`; --help, --version and usage
// errors as every tool's: tools/cli_common.h). Usage: see kCommand. Checks and names the
// logs, tunes them (tune.h: one pass over each, the sweep of sweep.h, the ranking), prints
// (tune_report.h). Exit status: 0 done; 1 a log could not be read or holds no events; 2 usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/parse.h"
#include "log/read/input.h"
#include "tools/cli_common.h"
#include "tools/replay/bytes_arg.h"
#include "tools/tune/sweep.h"
#include "tools/tune/tune.h"
#include "tools/tune/tune_report.h"

namespace {

const cudapool::cli::Command kCommand = {
    "cudapool tune",
    "usage: cudapool tune [--device-memory SIZE] [--fraction F] [--try CONF]... [--json] "
    "[--threads N] [--rows N] [--no-idle] [--idle-cost PCT] [--quiet] LOG...",
    "  Replays each cudapool.log/1 file under a sweep of pool settings (the log's own, the\n"
    "  defaults, expandable segments, max_split_size_mb, roundup_power2_divisions,\n"
    "  large_segment_size_mb, max_non_split_rounding_mb, garbage_collection_threshold with a\n"
    "  fraction, combinations, and every --try) and ranks them by peak reserved memory, then\n"
    "  tries idle release (idle_release_ms) on the best by peak and recommends a conf string.\n"
    "  Several logs (the ranks of one job): a table per log and the setting best for the\n"
    "  worst of them. LOG: a file or - (stdin); plain, gzip or zstd.\n"
    "  --device-memory SIZE  device size for the replays (default: each log header's, else\n"
    "                        80G; 2M to 1024T): OOMs are counted against it. SIZE: bytes, or\n"
    "                        a number with K, M, G or T, any case, B or iB optional (512M,\n"
    "                        80G, 2GB, 2gib, 1.5T): binary units, G = GiB = 2^30 bytes, as\n"
    "                        PyTorch and nvidia-smi count\n"
    "  --fraction F          per_process_memory_fraction F (0 < F <= 1) for every setting\n"
    "                        (garbage_collection_threshold is only tried with one)\n"
    "  --try CONF            also try CONF (changes against the log's own settings); repeatable\n"
    "  --json                one JSON object (schema cudapool.tune/1) instead of tables\n"
    "  --threads N           replays at once (default: all cores)\n"
    "  --rows N              rows per table in text (default 20)\n"
    "  --no-idle             do not try idle_release_ms (cudapool's own key: PyTorch's\n"
    "                        allocator has no idle release)\n"
    "  --idle-cost PCT       the share of the log's span (percent, above 0, at most 100;\n"
    "                        default 2) an idle variant may cost in mapping memory again to be\n"
    "                        recommended: more trades speed for less memory held over time\n"
    "  --quiet               no progress line (drawn on stderr only when it is a terminal)\n"
    "  --help, --version     this text; the version\n"
    "  Exit status: 0 done; 1 a log cannot be read or holds no events; 2 a usage error.\n"
    "  docs/tune.md\n"};

int usage_error(const std::string& what) {
  return cudapool::cli::usage_error(kCommand, what);
}

bool parse_count(const std::string& text, long lo, long hi, long& out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi) return false;
  out = v;
  return true;
}

// A number above 0 and at most hi, the whole of text.
bool parse_positive(const std::string& text, double hi, double& out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0.0 && v <= hi)) return false;
  out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cudapool;
  tune::SweepInputs sweep_in;
  tune::TuneOptions options;
  bool json = false, quiet = false;
  std::size_t rows = 20;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name, std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      (void)name;
      return true;
    };
    std::string v;
    int status = 0;
    if (cudapool::cli::standard_option(kCommand, arg, &status)) return status;
    if (arg == "--json") {
      json = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (arg == "--no-idle") {
      options.try_idle = false;
    } else if (arg == "--idle-cost") {
      double pct = 0.0;
      if (!value("--idle-cost", &v)) return usage_error("--idle-cost needs a value");
      if (!parse_positive(v, 100.0, pct)) {
        return usage_error("--idle-cost: a percentage above 0 and at most 100, not '" + v + "'");
      }
      options.idle_cost_budget = pct / 100.0;
    } else if (arg == "--device-memory") {
      if (!value("--device-memory", &v)) return usage_error("--device-memory needs a value");
      std::uint64_t bytes = 0;
      // Below 2 MiB no segment fits; above 2^50 (1 PiB) no device exists.
      if (!replay::parse_bytes(v, bytes) || bytes < (2ull << 20) || bytes > (1ull << 50)) {
        return usage_error("--device-memory: not a device size (2M to 1024T): '" + v +
                           "': a size is " + replay::kSizeForms);
      }
      options.device_memory = bytes;
    } else if (arg == "--fraction") {
      if (!value("--fraction", &v)) return usage_error("--fraction needs a value");
      double f = 0.0;
      if (!parse_positive(v, 1.0, f)) {
        return usage_error("--fraction: a number greater than 0 and at most 1, not '" + v + "'");
      }
      sweep_in.fraction = f;
    } else if (arg == "--try") {
      if (!value("--try", &v)) return usage_error("--try needs a conf string");
      const config::ParseResult parsed = config::parse_conf(v);
      if (!parsed.diagnostics.empty()) {
        for (const auto& d : parsed.diagnostics) std::fprintf(stderr, "%s\n", d.message().c_str());
        return usage_error("--try '" + v + "': not a valid conf string");
      }
      sweep_in.tries.push_back(v);
    } else if (arg == "--threads") {
      long n = 0;
      if (!value("--threads", &v) || !parse_count(v, 1, 1024, n)) {
        return usage_error("--threads: a number from 1 to 1024");
      }
      options.threads = static_cast<int>(n);
    } else if (arg == "--rows") {
      long n = 0;
      if (!value("--rows", &v) || !parse_count(v, 1, 100000, n)) {
        return usage_error("--rows: a number from 1 to 100000");
      }
      rows = static_cast<std::size_t>(n);
    } else if (arg != "-" && arg.size() > 1 && arg[0] == '-') {
      return usage_error("unknown option " + arg);
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) return usage_error("no LOG given");

  const auto start = std::chrono::steady_clock::now();
  std::vector<tune::LogInput> logs(paths.size());
  int stdin_uses = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (paths[i] == "-" && ++stdin_uses > 1) return usage_error("'-' (standard input) once only");
    logs[i].path = paths[i];
    // Every path is checked before the work starts; each is opened (plain, gzip or zstd:
    // log/read/input.h) when it is read.
    if (paths[i] != "-") {
      std::string error;
      if (!cudapool::log::LogInput::check(paths[i], &logs[i].rereadable, &error)) {
        std::fprintf(stderr, "cudapool-tune: %s\n", error.c_str());
        return 1;
      }
    }
    logs[i].open = [path = paths[i], quiet](std::string* error) {
      return tune::from_file(path, !quiet, error);
    };
  }
  tune::TuneResult result;
  std::string error;
  if (!tune::run_tune(logs, sweep_in, options, &result, &error)) {
    std::fprintf(stderr, "cudapool-tune: %s\n", error.c_str());
    return 1;
  }
  for (const std::string& note : result.notes)
    std::fprintf(stderr, "cudapool-tune: %s\n", note.c_str());
  tune::ReportContext ctx;
  ctx.paths = paths;
  ctx.rows = rows;
  ctx.threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  ctx.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string out = json ? tune::json_report(result, ctx) : tune::text_report(result, ctx);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
