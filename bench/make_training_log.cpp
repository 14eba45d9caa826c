// SPDX-License-Identifier: Apache-2.0
// bench/make_training_log.cpp: writes a cudapool.log/1 file shaped like the shim's log of a
// PyTorch training loop (bench/training_log/: the workload, the simulated process, the call
// sites), of any length, the same bytes for the same arguments. For the tools' benchmarks
// (bench/tools_speed.sh) and tests; never a log of a real run. Usage: see kUsage.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "bench/training_log/output.h"
#include "bench/training_log/process.h"
#include "bench/training_log/workload.h"
#include "config/parse.h"

#ifndef CUDAPOOL_VERSION
#define CUDAPOOL_VERSION "0.0.0"
#endif

namespace {

constexpr const char* kUsage =
    "usage: make_training_log [--events N | --steps N] [--seed N] [--requests-only]\n"
    "                         [--backtrace N] [--vary-shapes] [--conf STRING] [--layers N]\n"
    "                         [--hidden N] [--batch N] [--seq N] [--vocab N] OUT\n"
    "  Writes to OUT (a file, created or truncated; - for stdout) the allocation log the shim\n"
    "  would write for a transformer's training loop under PyTorch with its cache off: about\n"
    "  2,000 allocations a step (70 x layers + 36), 3 events each, segments as the pool makes\n"
    "  them, two threads, simulated times, and a summary line that cudapool-replay reproduces.\n"
    "  --events N        whole steps until at least N events are written (default 1000000)\n"
    "  --steps N         exactly N steps instead\n"
    "  --seed N          the workload's and the clock's randomness (default 1): the same\n"
    "                    arguments give the same bytes\n"
    "  --requests-only   alloc and free_requested lines only, with the request's fields (no\n"
    "                    pool decisions: like examples/logs/training-loop.jsonl)\n"
    "  --backtrace N     N return addresses (0-16) with every alloc, as CUDAPOOL_BACKTRACE=N\n"
    "  --vary-shapes     each step's sequence length drawn from [seq/2, seq]\n"
    "  --conf STRING     the pool's settings (the header's conf; default: PyTorch's defaults)\n"
    "  --layers N --hidden N --batch N --seq N --vocab N\n"
    "                    the model (defaults 28, 1024, 8, 512, 8192; bf16)\n"
    "  Exit status: 0 written; 1 OUT cannot be written, or the model does not fit the\n"
    "  simulated H200; 2 a usage error. docs/benchmarks.md\n";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "make_training_log: %s\n%s", what.c_str(), kUsage);
  std::exit(2);
}

// A decimal number in [lo, hi], or a usage error naming the option.
std::uint64_t number(std::string_view name, std::string_view text, std::uint64_t lo,
                     std::uint64_t hi) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    usage_error(std::string(name) + ": '" + std::string(text) + "' is not a number from " +
                std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  using cudapool::bench::ModelShape;
  ModelShape shape;
  cudapool::bench::ProcessSettings settings;
  settings.version = CUDAPOOL_VERSION;
  settings.argv.assign(argv, argv + argc);
  std::uint64_t events = 1000000, steps = 0;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) usage_error(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--events") {
      events = number(arg, value(), 1, std::uint64_t{1} << 40);
    } else if (arg == "--steps") {
      steps = number(arg, value(), 1, std::uint64_t{1} << 30);
    } else if (arg == "--seed") {
      settings.seed = number(arg, value(), 0, ~std::uint64_t{0});
    } else if (arg == "--requests-only") {
      settings.requests_only = true;
    } else if (arg == "--backtrace") {
      settings.backtrace = static_cast<int>(number(arg, value(), 0, cudapool::log::kMaxBacktrace));
    } else if (arg == "--vary-shapes") {
      shape.vary_shapes = true;
    } else if (arg == "--conf") {
      settings.conf = value();
    } else if (arg == "--layers") {
      shape.layers = number(arg, value(), 1, 1024);
    } else if (arg == "--hidden") {
      shape.hidden = number(arg, value(), 64, 65536);
    } else if (arg == "--batch") {
      shape.batch = number(arg, value(), 1, 4096);
    } else if (arg == "--seq") {
      shape.seq = number(arg, value(), 8, 1 << 20);
    } else if (arg == "--vocab") {
      shape.vocab = number(arg, value(), 1, 1 << 20);
    } else if (arg != "-" && arg.starts_with("-")) {
      usage_error("unknown option " + std::string(arg));
    } else if (path.empty()) {
      path = arg;
    } else {
      usage_error("one OUT only");
    }
  }
  if (path.empty()) usage_error("no OUT (a file, or - for stdout)");
  if (shape.batch * shape.seq > (std::size_t{1} << 24)) {
    usage_error("--batch x --seq: more than 16777216 tokens a step");
  }
  const cudapool::config::ParseResult parsed = cudapool::config::parse_conf(settings.conf);
  if (!parsed.diagnostics.empty()) {
    for (const auto& d : parsed.diagnostics) std::fprintf(stderr, "%s\n", d.message().c_str());
    usage_error("--conf: the settings string has errors");
  }

  cudapool::bench::Output out;
  std::string error;
  if (!out.open(path, &error)) {
    std::fprintf(stderr, "make_training_log: %s\n", error.c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  cudapool::bench::TrainingLoop loop(shape, settings.seed);
  try {
    cudapool::bench::SimulatedProcess process(settings, parsed, out);
    while (steps != 0 ? loop.steps() < steps : process.events() < events) loop.step(process);
    process.finish();
    if (!out.close(&error)) {
      std::fprintf(stderr, "make_training_log: %s\n", error.c_str());
      return 1;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(
        stderr,
        "make_training_log: %s: %llu events, %llu steps (%llu allocations a step), %zu "
        "bytes in %.1f s\n",
        path == "-" ? "<stdout>" : path.c_str(), static_cast<unsigned long long>(process.events()),
        static_cast<unsigned long long>(loop.steps()),
        static_cast<unsigned long long>(loop.allocations_per_step()), out.bytes(), seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_training_log: %s\n", e.what());
    out.close(&error);
    return 1;
  }
  return 0;
}
