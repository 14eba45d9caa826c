// SPDX-License-Identifier: Apache-2.0
// tools/replay/main.cpp: the cudapool-replay command line (`cudapool replay`). Usage: see kCommand;
// --help, --version and usage errors as every tool's (tools/cli_common.h). Not here: the replay
// (replayer.h) and what it prints (report.h).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "log/read/input.h"
#include "tools/cli_common.h"
#include "tools/replay/bytes_arg.h"
#include "tools/replay/recorded_log.h"
#include "tools/replay/replayer.h"
#include "tools/replay/report.h"

namespace {

const cudapool::cli::Command kCommand = {
    "cudapool replay",
    "usage: cudapool replay [--conf STRING] [--device-memory SIZE] [--json] [--quiet] "
    "[--name NAME] [--write-log OUT] [--no-log-addresses] LOG",
    "  Replays the alloc/free events of a cudapool.log/1 file (LOG, or - for stdin; plain,\n"
    "  gzip or zstd) through the pool with a simulated device and prints the memory summary\n"
    "  (or, with --json, one JSON object with torch.cuda.memory_stats() names).\n"
    "  --conf STRING         pool settings (default: the conf string in the log header)\n"
    "  --device-memory SIZE  simulated device size (default: the log header's, else 80G; at\n"
    "                        most 16T). SIZE: bytes, or a number with K, M, G or T, any case,\n"
    "                        B or iB optional (512M, 80G, 2GB, 2gib, 1.5T): binary units,\n"
    "                        G = GiB = 2^30 bytes, as PyTorch and nvidia-smi count\n"
    "  --no-log-addresses    give new segments fresh simulated addresses instead of the\n"
    "                        addresses of the log's segment_alloc events\n"
    "  --write-log OUT       also write the pool's decisions (blocks, segments, fences) as a\n"
    "                        cudapool.log/1 file: what the viewers draw of a log of requests\n"
    "  --quiet               no progress line (drawn on stderr only when it is a terminal)\n"
    "  --name NAME           the name messages give LOG (default: LOG; <stdin> for -)\n"
    "  --help, --version     this text; the version\n"
    "  Exit status: 0 replayed; 1 LOG cannot be read or holds no log (empty, a directory, no\n"
    "  line a header, an event or a summary; corrupt compressed data); 2 a usage error.\n"
    "  docs/replay.md\n"};

}  // namespace

int main(int argc, char** argv) {
  using cudapool::cli::usage_error;
  cudapool::replay::ReplaySettings settings;
  bool json = false;
  cudapool::log::InputOptions input_options;
  input_options.progress = true;
  std::string path, write_log;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    int status = 0;
    if (cudapool::cli::standard_option(kCommand, arg, &status)) return status;
    const bool takes_value =
        arg == "--write-log" || arg == "--name" || arg == "--conf" || arg == "--device-memory";
    if (takes_value && i + 1 >= argc) return usage_error(kCommand, arg + " needs a value");
    if (arg == "--no-log-addresses") {
      settings.log_addresses = false;
    } else if (arg == "--write-log") {
      write_log = argv[++i];
      if (write_log.empty()) return usage_error(kCommand, "--write-log needs a path");
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--quiet") {
      input_options.progress = false;
    } else if (arg == "--name") {
      input_options.name = argv[++i];
    } else if (arg == "--conf") {
      settings.conf = argv[++i];
    } else if (arg == "--device-memory") {
      const std::string text = argv[++i];
      std::uint64_t bytes = 0;
      if (!cudapool::replay::parse_bytes(text, bytes) || bytes == 0) {
        return usage_error(kCommand, "--device-memory: not a size: '" + text + "': a size is " +
                                         cudapool::replay::kSizeForms);
      }
      if (bytes > cudapool::replay::kMaxDeviceMemory) {
        return usage_error(kCommand, "--device-memory: " + text +
                                         " is more than the replay simulates (16T at most)");
      }
      settings.device_memory = bytes;
    } else if (arg != "-" && arg.size() > 1 && arg[0] == '-') {
      return usage_error(kCommand, "unknown option " + arg);
    } else if (path.empty()) {
      path = arg;
    } else {
      return usage_error(kCommand, "one LOG only (" + path + ", then " + arg + ")");
    }
  }
  if (path.empty()) return usage_error(kCommand, "no LOG given");

  cudapool::replay::PoolLogWriter writer;
  if (!write_log.empty()) {
    std::string error;
    if (write_log == path && path != "-") {
      return usage_error(kCommand, "--write-log " + write_log + " is the log being read");
    }
    if (!writer.open(write_log, &error)) {
      std::fprintf(stderr, "cudapool-replay: %s\n", error.c_str());
      return 1;
    }
    settings.write_log = &writer;
    settings.version = CUDAPOOL_VERSION;
    settings.argv.assign(argv, argv + argc);
  }
  cudapool::replay::Replayer replayer(settings);
  const auto start = std::chrono::steady_clock::now();
  cudapool::log::LogInput input;
  std::string error;
  if (!input.open(path, &error, input_options)) {
    std::fprintf(stderr, "cudapool-replay: %s\n", error.c_str());
    writer.discard();
    return 1;
  }
  replayer.feed_stream(input.stream());
  if (!input.error().empty()) {
    std::fprintf(stderr, "cudapool-replay: %s\n", input.error().c_str());
    writer.discard();
    return 1;
  }
  if (!input.ended_early().empty()) {
    std::fprintf(stderr, "cudapool-replay: note: %s\n", input.ended_early().c_str());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Input that holds no log at all (empty, binary, blank lines only): an error, nothing printed.
  const std::string& name = input.name();
  if (!replayer.holds_a_log()) {
    const auto& problems = replayer.problems();
    const std::string first =
        problems.empty() ? ""
                         : "line " + std::to_string(problems[0].line) + ": " + problems[0].what;
    std::fprintf(stderr, "cudapool-replay: %s\n",
                 cudapool::replay::not_a_log(name, replayer.counts().lines, first).c_str());
    writer.discard();
    return 1;
  }
  if (!replayer.has_header()) {
    std::fprintf(stderr,
                 "cudapool-replay: note: %s has no header line: the settings are --conf's or the "
                 "defaults, each device has --device-memory or 80 GiB\n",
                 name.c_str());
  }
  if (replayer.replayed_nothing()) {
    std::fprintf(stderr, "cudapool-replay: note: %s has no events to replay\n", name.c_str());
  }
  for (const std::string& d : replayer.conf_diagnostics()) std::fprintf(stderr, "%s\n", d.c_str());
  if (!write_log.empty()) {
    cudapool::log::Summary summary;
    for (const int dev : replayer.devices()) summary.devices.emplace_back(dev, replayer.stats(dev));
    std::string error;
    if (!writer.close(std::move(summary), &error)) {
      std::fprintf(stderr, "cudapool-replay: %s\n", error.c_str());
      return 1;
    }
  }
  const std::string out = json ? cudapool::replay::json_report(replayer, seconds)
                               : cudapool::replay::text_report(replayer, seconds);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
