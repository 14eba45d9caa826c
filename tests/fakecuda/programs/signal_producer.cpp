// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/signal_producer.cpp: allocates and frees in a tight loop through the
// driver's exported names (linked with -lcuda against the fake) until a signal ends it, counting
// the pairs done in a file mapped shared, so the count survives the process. Under the shim with
// CUDAPOOL_LOG, the log's writer falls behind such a loop; exit_signal.sh checks that a SIGTERM
// still leaves every pair counted in the log. With --own-handler the program handles SIGTERM
// itself (installed before its first CUDA call) and returns normally; with --handler-exits its
// SIGTERM handler calls _exit(7); with --exit-after N it calls _exit(7) after N pairs (no atexit
// handler runs either way); with --exec-after N it execs /bin/true after N pairs. A run that no
// signal or exit ends stops by itself after 30 s with status 3, so that a broken test cannot leave
// it filling the disk with its log. Usage: signal_producer COUNTER_FILE [--own-handler |
// --handler-exits | --exit-after N |
//                                       --exec-after N]
#include <cuda.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

volatile sig_atomic_t g_stop = 0;

void on_term(int) {
  g_stop = 1;
}

void exit_on_term(int) {
  _exit(7);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: signal_producer COUNTER_FILE [--own-handler | --handler-exits | "
                 "--exit-after N | --exec-after N]\n");
    return 2;
  }
  std::uint64_t exit_after = 0, exec_after = 0;
  if (argc > 2 && std::strcmp(argv[2], "--own-handler") == 0) signal(SIGTERM, on_term);
  if (argc > 2 && std::strcmp(argv[2], "--handler-exits") == 0) signal(SIGTERM, exit_on_term);
  if (argc > 3 && std::strcmp(argv[2], "--exit-after") == 0)
    exit_after = std::strtoull(argv[3], nullptr, 10);
  if (argc > 3 && std::strcmp(argv[2], "--exec-after") == 0)
    exec_after = std::strtoull(argv[3], nullptr, 10);
  const int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof(std::uint64_t)) != 0) {
    std::perror("counter file");
    return 2;
  }
  void* map = mmap(nullptr, sizeof(std::uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  auto* done = static_cast<std::atomic<std::uint64_t>*>(map);
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "FAIL: no context\n");
    return 1;
  }
  std::uint64_t pairs = 0;
  const time_t give_up = time(nullptr) + 30;
  while (g_stop == 0) {
    if ((pairs & 0xffff) == 0 && time(nullptr) > give_up) {
      std::fprintf(stderr, "FAIL: nothing ended the loop in 30 s\n");
      return 3;
    }
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
      std::fprintf(stderr, "FAIL: pair %llu\n", static_cast<unsigned long long>(pairs));
      return 1;
    }
    done->store(++pairs, std::memory_order_release);
    if (pairs == exit_after) _exit(7);
    if (pairs == exec_after) {
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      std::perror("execl /bin/true");
      return 4;
    }
  }
  std::printf("signal_producer: stopped by its own handler after %llu pairs\n",
              static_cast<unsigned long long>(pairs));
  return 0;
}
