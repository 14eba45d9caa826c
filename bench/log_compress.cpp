// SPDX-License-Identifier: Apache-2.0
// bench/log_compress.cpp: what a log costs on disk and on the writer thread, plain and compressed,
// for the lines of a real log. Reads a cudapool.log/1 file (plain; `-` is stdin: `zcat
// run.jsonl.gz | log_compress -`), turns every event line back into the record the shim logged
// (formatted again it must give the same line: the lines that do not are counted and left out),
// and writes the records through log::Logger, the shim's writer, to DIR/bench.jsonl, .jsonl.zst
// and .jsonl.gz, appended at the pace of the log's own t_ns (--rate N: N events a second; --rate
// 0: as fast as they go). Prints bytes per event on disk and the writer thread's CPU time per event
// (its /proc schedstat). --levels: also the codecs alone at other levels and sync intervals (a sync
// point every N events, no page layout), for the choice of the log's settings. A benchmark, never
// a test: `build/bench/log_compress LOG [--rate N] [--repeat K] [--dir DIR] [--levels]` (--repeat:
// the log's events K times over, one run after the other, for a longer measure).
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "log/compression.h"
#include "log/format.h"
#include "log/logger.h"

namespace {

using cudapool::log::Compression;
using cudapool::log::LogRecord;
using nlohmann::json;

struct Events {
  std::vector<LogRecord> records;
  std::vector<std::string> lines;   // as the log has them
  std::uint64_t left_out = 0;       // event lines a record does not give again
  std::deque<std::string> strings;  // entry and caller texts the records point to
};

std::uint64_t hex(const json& j) {
  return j.is_string() ? std::strtoull(j.get<std::string>().c_str(), nullptr, 16) : 0;
}

bool to_record(const json& e, Events& ev, LogRecord* r) {
  if (!e.contains("action") || !e["action"].is_string() || e["action"] == "summary") return false;
  if (!cudapool::log::action_from_name(e["action"].get<std::string>(), &r->action)) return false;
  r->seq = e.value("seq", std::uint64_t{0});
  r->t_ns = e.value("t_ns", std::uint64_t{0});
  r->tid = e.value("tid", std::uint64_t{0});
  r->device = e.value("dev", 0);
  r->ctx = static_cast<std::uint8_t>(e.value("ctx", 0));
  r->ptr = hex(e.value("ptr", json()));
  r->size = e.value("size", std::uint64_t{0});
  r->block_size = e.value("block_size", std::uint64_t{0});
  r->segment = hex(e.value("segment", json()));
  r->stream = hex(e.value("stream", json()));
  r->cache_hit = e.value("cache_hit", false);
  r->latency_ns = e.value("latency_ns", std::uint64_t{0});
  r->error = e.value("error", 0);
  r->requested_by = e.value("requested_by", 0u);
  if (e.contains("entry"))
    r->entry = ev.strings.emplace_back(e["entry"].get<std::string>()).c_str();
  if (e.contains("caller")) {
    r->caller = ev.strings.emplace_back(e["caller"].get<std::string>()).c_str();
  }
  if (e.contains("backtrace")) {
    for (const json& f : e["backtrace"]) {
      if (r->frames == cudapool::log::kMaxBacktrace) return false;
      r->backtrace[r->frames++] = hex(f);
    }
  }
  return true;
}

Events read_events(std::istream& in) {
  Events ev;
  std::string line;
  char buf[cudapool::log::kMaxEventLine];
  while (std::getline(in, line)) {
    const json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    LogRecord r;
    if (e.is_discarded() || !e.is_object() || e.contains("schema")) continue;
    if (!to_record(e, ev, &r)) {
      if (e.value("action", "") != "summary") ++ev.left_out;
      continue;
    }
    const std::size_t n = cudapool::log::format_event(r, buf, sizeof buf);
    if (n == 0 || std::string_view(buf, n - 1) != line) {
      ++ev.left_out;
      continue;
    }
    ev.records.push_back(r);
    ev.lines.push_back(line);
  }
  return ev;
}

// The CPU time of this process's thread named `name`, in ns (schedstat), or 0.
std::uint64_t thread_cpu_ns(const char* name) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return 0;
  std::uint64_t ns = 0;
  while (const dirent* t = readdir(d)) {
    if (t->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + t->d_name;
    std::ifstream comm(base + "/comm");
    std::string c;
    std::getline(comm, c);
    if (c != name) continue;
    std::ifstream sched(base + "/schedstat");
    sched >> ns;
  }
  closedir(d);
  return ns;
}

off_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

struct Written {
  double bytes_per_event = 0, writer_ns_per_event = 0, seconds = 0;
};

// The records through the Logger into path, paced (rate < 0: by their t_ns; 0: at once; else
// events a second).
Written write_through_logger(const Events& ev, const std::string& path, double rate, int repeat) {
  cudapool::log::HeaderInfo header;
  header.version = "bench";
  header.pid = 1;
  header.start_unix_ns = 1;
  cudapool::log::Logger* log = cudapool::log::Logger::start(
      path, header, [](const char*) -> const char* { return nullptr; });
  if (log == nullptr) std::exit(1);
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  const std::uint64_t first_t = ev.records.front().t_ns;
  const std::uint64_t span = ev.records.back().t_ns - first_t + 1;
  const std::size_t n = ev.records.size();
  for (int k = 0; k < repeat; ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      LogRecord r = ev.records[i];
      r.t_ns += k * span;  // the runs one after the other
      const double due_s = rate < 0   ? static_cast<double>(r.t_ns - first_t) * 1e-9
                           : rate > 0 ? static_cast<double>(k * n + i) / rate
                                      : 0.0;
      if (due_s > 0) std::this_thread::sleep_until(t0 + std::chrono::duration<double>(due_s));
      log->append(r);
    }
  }
  // Every event in the file (a compressed log's frame closed), then the writer's CPU time.
  log->wait_written_before_exit(60000);
  const std::uint64_t cpu = thread_cpu_ns("cudapool-log");
  log->finish(cudapool::log::Summary{});
  Written w;
  w.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  const double events = static_cast<double>(n) * repeat;
  w.bytes_per_event = static_cast<double>(file_size(log->path())) / events;
  w.writer_ns_per_event = static_cast<double>(cpu) / events;
  std::remove(log->path().c_str());
  delete log;
  return w;
}

// The codec alone: the lines in chunks of `every` events, each ended by a sync point.
void codec_alone(const Events& ev, Compression kind, int level, std::size_t every) {
  std::string error;
  auto c = cudapool::log::Compressor::create(kind, &error, level);
  if (c == nullptr) {
    std::printf("| %s %d | %s |\n", cudapool::log::compression_name(kind), level, error.c_str());
    return;
  }
  std::string out, line;
  std::uint64_t bytes = 0;
  timespec a{}, b{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (std::size_t i = 0; i < ev.lines.size(); ++i) {
    line = ev.lines[i];
    line.push_back('\n');
    c->add(line, out);
    if ((i + 1) % every == 0 || i + 1 == ev.lines.size()) c->sync(out);
    bytes += out.size();
    out.clear();
  }
  c->end(out);
  bytes += out.size();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  const double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
  std::printf("| %s %d | %zu | %.2f | %.0f |\n", cudapool::log::compression_name(kind), level,
              every, static_cast<double>(bytes) / ev.lines.size(), ns / ev.lines.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, dir = "/tmp";
  double rate = -1;
  bool levels = false;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rate" && i + 1 < argc) {
      rate = std::atof(argv[++i]);
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--levels") {
      levels = true;
    } else if (input.empty()) {
      input = a;
    } else {
      std::fprintf(stderr,
                   "usage: log_compress LOG|- [--rate N] [--repeat K] [--dir DIR] [--levels]\n");
      return 2;
    }
  }
  if (input.empty()) {
    std::fprintf(stderr,
                 "usage: log_compress LOG|- [--rate N] [--repeat K] [--dir DIR] [--levels]\n");
    return 2;
  }
  Events ev;
  if (input == "-") {
    ev = read_events(std::cin);
  } else {
    std::ifstream in(input);
    if (!in) {
      std::fprintf(stderr, "log_compress: cannot read %s\n", input.c_str());
      return 1;
    }
    ev = read_events(in);
  }
  if (ev.records.empty()) {
    std::fprintf(stderr, "log_compress: no event line in %s\n", input.c_str());
    return 1;
  }
  std::uint64_t plain_bytes = 0;
  for (const std::string& l : ev.lines) plain_bytes += l.size() + 1;
  std::printf(
      "%zu events x %d (%.1f bytes each as the log has them), %llu lines left out; pace: %s\n\n",
      ev.records.size(), repeat, static_cast<double>(plain_bytes) / ev.records.size(),
      static_cast<unsigned long long>(ev.left_out),
      rate < 0    ? "the log's own t_ns"
      : rate == 0 ? "at once"
                  : "--rate");
  std::printf("| written as | bytes per event | writer CPU per event | seconds |\n");
  std::printf("| --- | --- | --- | --- |\n");
  for (const char* name : {"bench.jsonl", "bench.jsonl.zst", "bench.jsonl.gz"}) {
    const std::string path = dir + "/log-compress-" + std::to_string(getpid()) + "-" + name;
    const Written w = write_through_logger(ev, path, rate, repeat);
    std::printf("| %s | %.2f | %.0f ns | %.2f |\n", name, w.bytes_per_event, w.writer_ns_per_event,
                w.seconds);
  }
  if (levels) {
    std::printf(
        "\n| codec, level | sync every N events | bytes per event | CPU per event (ns) |\n");
    std::printf("| --- | --- | --- | --- |\n");
    for (const int level : {1, 2, 3, 5, 7}) {
      for (const std::size_t every : {30, 300, 3000})
        codec_alone(ev, Compression::kZstd, level, every);
    }
    for (const int level : {1, 6, 9}) {
      for (const std::size_t every : {30, 300, 3000})
        codec_alone(ev, Compression::kGzip, level, every);
    }
  }
  return 0;
}
