// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/control_workload.cpp: a program for the control endpoint's test
// (tests/fakecuda/control_check.py, metrics_file_check.py, control_cleanup_check.py): it keeps
// allocating and freeing (sizes 1 B to 20 MiB, up to 24 blocks held, everything freed every 4096
// steps so that idle segments come and go), stamping every block and checking the stamp before
// each free, while the test asks it for stats, empty-cache, snapshots and Prometheus text from
// outside. Linked with -lcuda against the fake. Its files in DIR: progress (the steps done, a
// mapped counter the test reads to see the loop move), state ("quiet" once the loop ended and only
// its kept blocks are allocated), driver_bytes (written when told to exit: the fake driver's bytes
// in use then), and the test's stop (end the loop) and exit (exit now). Its
// result, on stdout, depends only on the seed and the steps: "control_workload: steps N checksum X
// kept K" (a run with --steps N under other conditions must print the same). With --fork it forks
// once, early: the child writes its pid to DIR/child.pid, sleeps 1 s, and calls exit(0) (its
// at-exit handlers run). With --hold N it first allocates N blocks of 512 bytes and keeps them to
// the end (a snapshot then runs to hundreds of KiB: more than a socket buffer takes). With --rate R
// it makes at most R steps a second (a log of a run of some seconds then stays small). With
// --underscore-exit it ends by _exit(0) (no atexit handler runs) instead of returning from main.
// Once quiet, a file DIR/exec (one argument a line: the function, execvp or execve, then the
// program and its arguments) makes it exec that (execve with its own environment); when the exec
// fails it writes DIR/exec_failed (the error) and goes on waiting. It gives up after 60 s. Usage:
// control_workload DIR [--steps N] [--seed S] [--fork] [--hold N] [--rate R]
//                             [--underscore-exit]
#include <cuda.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "fakecuda_control.h"

extern char** environ;

namespace {

std::string g_dir;

bool exists(const char* name) {
  struct stat st {};
  return stat((g_dir + "/" + name).c_str(), &st) == 0;
}

void write_file(const char* name, const std::string& text) {
  const std::string path = g_dir + "/" + name, tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return;
  std::fputs(text.c_str(), f);
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}

std::uint64_t splitmix(std::uint64_t* s) {
  std::uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Held {
  CUdeviceptr p;
  size_t n;
  std::uint64_t tag;
};

// The fake's device pointers are host addresses: a tag at the start, middle and end.
void stamp(const Held& h) {
  auto* bytes = reinterpret_cast<unsigned char*>(static_cast<uintptr_t>(h.p));
  if (h.n < 8) {
    for (size_t i = 0; i < h.n; ++i) bytes[i] = static_cast<unsigned char>(h.tag + i);
    return;
  }
  for (size_t off : {size_t{0}, h.n / 2, h.n - 8}) std::memcpy(bytes + off, &h.tag, 8);
}

bool stamped(const Held& h) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(static_cast<uintptr_t>(h.p));
  if (h.n < 8) {
    for (size_t i = 0; i < h.n; ++i) {
      if (bytes[i] != static_cast<unsigned char>(h.tag + i)) return false;
    }
    return true;
  }
  for (size_t off : {size_t{0}, h.n / 2, h.n - 8}) {
    if (std::memcmp(bytes + off, &h.tag, 8) != 0) return false;
  }
  return true;
}

// DIR/exec, when there: the exec it asks for (the file is removed first). Returns only when the
// exec failed, after writing DIR/exec_failed.
void exec_if_asked() {
  if (!exists("exec")) return;
  std::ifstream in(g_dir + "/exec");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  unlink((g_dir + "/exec").c_str());
  if (lines.size() < 2) return;
  std::vector<char*> args;
  for (std::size_t i = 1; i < lines.size(); ++i) args.push_back(lines[i].data());
  args.push_back(nullptr);
  if (lines[0] == "execve") {
    execve(args[0], args.data(), environ);
  } else {
    execvp(args[0], args.data());
  }
  write_file("exec_failed", lines[0] + " " + lines[1] + ": " + std::strerror(errno) + "\n");
}

[[noreturn]] void fail(const char* what, std::uint64_t step) {
  std::fprintf(stderr, "FAIL: control_workload: %s at step %llu\n", what,
               static_cast<unsigned long long>(step));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: control_workload DIR [--steps N] [--seed S] [--fork] [--hold N] [--rate R] "
        "[--underscore-exit]\n");
    return 2;
  }
  g_dir = argv[1];
  std::uint64_t steps = 0, seed = 42;
  bool do_fork = false, underscore_exit = false;
  std::uint64_t hold = 0, rate = 0;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
      rate = std::strtoull(argv[++i], nullptr, 10);
    if (std::strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
      hold = std::strtoull(argv[++i], nullptr, 10);
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--fork") == 0)
      do_fork = true;
    else if (std::strcmp(argv[i], "--underscore-exit") == 0)
      underscore_exit = true;
  }
  const int fd = open((g_dir + "/progress").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof(std::uint64_t)) != 0) return 2;
  void* map = mmap(nullptr, sizeof(std::uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 2;
  auto* progress = static_cast<std::atomic<std::uint64_t>*>(map);
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "FAIL: no context\n");
    return 1;
  }
  static const size_t kSizes[] = {
      1,       200,     512,           4096,    65536,   500000,         (1 << 20) - 1,
      1 << 20, 2 << 20, (3 << 20) + 7, 6 << 20, 8 << 20, (12 << 20) + 1, 20 << 20};
  std::uint64_t rng = seed, checksum = 1469598103934665603ull;
  auto fold = [&](std::uint64_t v) { checksum = (checksum ^ v) * 1099511628211ull; };
  std::vector<Held> held;
  auto drop = [&](size_t i, std::uint64_t step) {
    if (!stamped(held[i])) fail("a block's stamp changed", step);
    fold(held[i].tag);
    fold(held[i].n);
    if (cuMemFree(held[i].p) != CUDA_SUCCESS) fail("cuMemFree failed", step);
    held[i] = held.back();
    held.pop_back();
  };
  std::vector<Held> kept;
  for (std::uint64_t i = 0; i < hold; ++i) {
    Held h{0, 512, (i << 8) | 0xa5};
    if (cuMemAlloc(&h.p, h.n) != CUDA_SUCCESS || h.p == 0) fail("cuMemAlloc of a held block", 0);
    stamp(h);
    kept.push_back(h);
  }
  const time_t give_up = time(nullptr) + 60;
  timespec begin{};
  clock_gettime(CLOCK_MONOTONIC, &begin);
  std::uint64_t step = 0;
  for (; steps == 0 || step < steps; ++step) {
    if (rate != 0 && (step & 63) == 0) {  // at most rate steps a second
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      const double ahead = static_cast<double>(step) / static_cast<double>(rate) -
                           (static_cast<double>(now.tv_sec - begin.tv_sec) +
                            static_cast<double>(now.tv_nsec - begin.tv_nsec) / 1e9);
      if (ahead > 0) usleep(static_cast<useconds_t>(ahead * 1e6));
    }
    if ((step & 1023) == 0) {
      if (time(nullptr) > give_up) fail("nothing stopped the loop in 60 s", step);
      if (steps == 0 && exists("stop")) break;
    }
    if (do_fork && step == 2000) {
      const pid_t child = fork();
      if (child == 0) {
        write_file("child.pid", std::to_string(getpid()) + "\n");
        usleep(1000000);
        std::exit(0);
      }
    }
    if ((step & 4095) == 4095) {
      while (!held.empty()) drop(held.size() - 1, step);
    }
    const std::uint64_t r = splitmix(&rng);
    if (held.size() < 24 && (held.empty() || (r & 1) != 0)) {
      size_t n = kSizes[(r >> 8) % (sizeof kSizes / sizeof kSizes[0])];
      if (n >= (12u << 20) && ((r >> 20) & 7) != 0) n = 4096;  // the largest only now and then
      Held h{0, n, (step << 8) | 0x5a};
      if (cuMemAlloc(&h.p, n) != CUDA_SUCCESS || h.p == 0) fail("cuMemAlloc failed", step);
      stamp(h);
      held.push_back(h);
    } else {
      drop((r >> 8) % held.size(), step);
    }
    progress->store(step + 1, std::memory_order_release);
  }
  // Keep five blocks (the first five left), free the rest, then wait to be told to exit.
  while (held.size() > 5) drop(held.size() - 1, step);
  std::printf("control_workload: steps %llu checksum %016llx kept %zu\n",
              static_cast<unsigned long long>(step), static_cast<unsigned long long>(checksum),
              held.size());
  std::fflush(stdout);
  write_file("state", "quiet\n");
  while (!exists("exit")) {
    if (time(nullptr) > give_up) fail("no exit file in 60 s", step);
    exec_if_asked();
    usleep(5000);
  }
  // What the driver holds now (cuMemAlloc and cuMemCreate bytes, every device): what the pool's
  // books say it reserved, once idle memory went back (idle_release_check.py).
  write_file("driver_bytes", std::to_string(fakecuda_bytes_in_use(-1)) + "\n");
  for (const std::vector<Held>* blocks : {&held, &kept}) {
    for (const Held& h : *blocks) {
      if (!stamped(h)) fail("a kept block's stamp changed", step);
    }
  }
  if (underscore_exit) _exit(0);
  return 0;
}
